#include "tailcut/wire/executor_session.h"

#include <algorithm>
#include <memory>
#include <random>

#include "tailcut/common/log.h"
#include "tailcut/common/process.h"
#include "tailcut/wire/wire.h"

namespace tailcut {
namespace {

// Warnings about the scheduler (errors, refused keys) at most this often.
constexpr double kLogEveryS = 10.0;
// "waiting for the scheduler" at most this often.
constexpr double kWaitLogEveryS = 5.0;
// With max_output_bytes, ZeroMQ may hold at most this many Reports, so a
// slow link backs outputs up into the outbox, where the cap applies,
// instead of into ZeroMQ's queue.
constexpr int kCappedSendQueue = 2;

// The first block of the arena each message from the scheduler is parsed
// into (Handle), one per thread: every session of a thread (a swarm group
// has thousands) shares it, and a Work's hundreds of assignments cost no
// malloc and no free each (issue 41: parsing and destroying a Work was
// ~30% of a no-op's executor samples).
constexpr size_t kParseBlockBytes = 256 << 10;

// Reentrant use (a hook handling another frame on this thread) gets no
// block: its arena allocates its own.
class ParseBlock {
 public:
  ParseBlock() {
    thread_local std::unique_ptr<char[]> block;
    thread_local bool in_use = false;
    if (in_use) return;
    if (!block) block.reset(new char[kParseBlockBytes]);
    in_use_ = &in_use;
    in_use = true;
    options_.initial_block = block.get();
    options_.initial_block_size = kParseBlockBytes;
  }
  ~ParseBlock() {
    if (in_use_) *in_use_ = false;
  }
  ParseBlock(const ParseBlock&) = delete;
  ParseBlock& operator=(const ParseBlock&) = delete;
  const google::protobuf::ArenaOptions& options() const { return options_; }

 private:
  google::protobuf::ArenaOptions options_;
  bool* in_use_ = nullptr;
};

std::string RandomHex(int digits) {
  static const char kHex[] = "0123456789abcdef";
  std::random_device rd;
  std::string s;
  for (int i = 0; i < digits; ++i) s += kHex[rd() & 15];
  return s;
}

}  // namespace

ExecutorSession::ExecutorSession(SessionOptions options, zmq::context_t& ctx, Hooks hooks)
    : o_(std::move(options)),
      ctx_(ctx),
      hooks_(std::move(hooks)),
      endpoints_(SplitEndpoints(o_.endpoint)),
      heartbeat_s_(o_.heartbeat_ms / 1000.0),
      lost_after_s_(o_.lost_after_ms ? o_.lost_after_ms / 1000.0 : 10 * heartbeat_s_),
      backoff_s_(o_.register_retry_s) {}

ExecutorSession::~ExecutorSession() {
  handshake_.reset();  // its socket first, or closing the context waits for ever
  if (socket_) socket_.close();
}

Status ExecutorSession::Connect() {
  // Same identity across reconnects and moves, unique across executors.
  routing_id_ = o_.name + "/" + RandomHex(8);
  for (const std::string& ep : endpoints_)
    if (o_.keys.key_file.empty() && !IsLocalOnlyEndpoint(ep))
      TC_LOG(Warn) << "no keys: the link to " << ep << " is neither encrypted nor proven to reach the real " << o_.peer
                   << " (docs/SECURITY.md)";
  return OpenSocket();
}

Status ExecutorSession::OpenSocket() {
  try {
    handshake_.reset();  // it watches the socket: before it closes
    if (socket_) socket_.close();
    socket_ = zmq::socket_t(ctx_, zmq::socket_type::dealer);
    ++sockets_opened_;
    socket_.set(zmq::sockopt::routing_id, routing_id_);
    // Unlimited: a full queue refuses (never drops) a Report, which then
    // waits in the outbox.
    socket_.set(zmq::sockopt::sndhwm, o_.max_output_bytes ? kCappedSendQueue : 0);
    socket_.set(zmq::sockopt::rcvhwm, 0);
    socket_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(o_.max_message_bytes));
    // Queue only to a live connection: a Register retried while the
    // scheduler is down is not piled up; unsent Reports wait in the outbox.
    socket_.set(zmq::sockopt::immediate, 1);
    socket_.set(zmq::sockopt::linger, 0);
    // ZMTP heartbeats: a connection whose peer went away without a word (a
    // half-open TCP connection) is closed and dialled again; the
    // scheduler's ROUTER hands our routing id over to the new one. Twice the
    // loss timeout, so a stalled scheduler is re-registered with first;
    // PINGs at half of it, not at the heartbeat rate: liveness is the
    // Reports' job, and a PING per executor per interval costs the
    // scheduler's I/O thread (docs/PROTOCOL.md, "Heartbeats"). No TTL: it
    // would arm a timer per PING on the scheduler's side, whose libzmq
    // cancels timers by a scan of all connections' timers (docs/SCALE.md);
    // the scheduler finds dead connections by TCP keepalive instead.
    const int zmtp_timeout = static_cast<int>(std::min<double>(2000 * lost_after_s_, 600000));
    socket_.set(zmq::sockopt::heartbeat_ivl, std::max(static_cast<int>(o_.heartbeat_ms), zmtp_timeout / 2));
    socket_.set(zmq::sockopt::heartbeat_timeout, zmtp_timeout);
    if (Status s = ApplyPeerKeys(socket_, o_.keys); !s.ok()) return s;
    if (o_.watch_handshake) handshake_ = std::make_unique<HandshakeMonitor>(ctx_, socket_, !o_.keys.key_file.empty());
    socket_.connect(endpoint());
  } catch (const zmq::error_t& e) {
    return Status::IoError(o_.peer + " " + o_.endpoint + ": " + e.what());
  }
  return Status::Ok();
}

bool ExecutorSession::Send(const wire::ExecutorMessage& msg) {
  try {
    return socket_.send(ToFrame(msg), zmq::send_flags::dontwait).has_value();
  } catch (const zmq::error_t& e) {
    TC_LOG(Warn) << "send to the " << o_.peer << " failed: " << e.what();
    return false;
  }
}

// ------------------------------------------------------------- outbox --

wire::AttemptResult* ExecutorSession::Refuse(AttemptId id, wire::AttemptResult::Outcome outcome,
                                             const std::string& why) {
  wire::AttemptResult* r = outbox_.add_results();
  r->set_attempt_id(id);
  r->set_outcome(outcome);
  r->set_error(why);
  ++refused_;
  TC_LOG(Debug) << "attempt " << id << (outcome == wire::AttemptResult::REFUSED ? " refused: " : " failed: ") << why;
  return r;
}

void ExecutorSession::AddResult(wire::AttemptResult* r) {
  // Error texts count too: a kernel's error message is as unbounded as its output.
  const uint64_t size = r->output().size() + r->error().size();
  const uint64_t cap = output_cap();
  if (size > 0 && held_output_bytes_ + size > cap) {
    const std::string why = size > cap ? "output of " + std::to_string(size) + " bytes exceeds the " + o_.self + "'s " +
                                             output_cap_name() + "=" + std::to_string(cap)
                                       : o_.self + " output memory full: " + std::to_string(held_output_bytes_) +
                                             " + " + std::to_string(size) + " bytes of outputs not yet sent, " +
                                             output_cap_name() + "=" + std::to_string(cap);
    wire::AttemptResult* x =
        Refuse(r->attempt_id(), size > cap ? wire::AttemptResult::FAILED : wire::AttemptResult::REFUSED, why);
    x->set_run_s(r->run_s());
    x->set_job_id(r->job_id());
    x->set_task_index(r->task_index());
    return;
  }
  held_output_bytes_ += size;
  outbox_.add_results()->Swap(r);
}

// --------------------------------------------------------------- loop --

void ExecutorSession::OnReadable(double now) {
  for (int i = 0; i < 4096; ++i) {  // then the loop's other work gets a turn
    zmq::message_t frame;
    if (!socket_.recv(frame, zmq::recv_flags::dontwait)) return;
    if (frame.more()) {  // the protocol is one frame per message
      while (frame.more() && socket_.recv(frame, zmq::recv_flags::dontwait)) {}
      TC_LOG(Warn) << "multi-frame message from the " << o_.peer << "; ignored";
      continue;
    }
    Handle(frame, now);
  }
}

void ExecutorSession::Handle(const zmq::message_t& frame, double now) {
  // Declared before the arena: the block outlives it.
  ParseBlock block;
  google::protobuf::Arena arena(block.options());
  wire::SchedulerToExecutor& in = *google::protobuf::Arena::CreateMessage<wire::SchedulerToExecutor>(&arena);
  if (!FromFrame(frame, &in)) {
    TC_LOG(Warn) << "malformed frame from the " << o_.peer << " (" << frame.size() << " bytes); ignored";
    return;
  }
  if (in.version() != kProtocolVersion) {
    TC_LOG(Warn) << o_.peer << " message with protocol version " << in.version() << " (this " << o_.self << " speaks "
                 << kProtocolVersion << "); ignored";
    return;
  }
  if (in.has_registered() && !TermCurrent(in.registered().term(), "RegisterAck", now)) return;
  if (in.has_work() && !TermCurrent(in.work().term(), "Work", now)) return;
  last_heard_ = now;
  switch (in.body_case()) {
    case wire::SchedulerToExecutor::kRegistered: OnRegistered(in.registered(), now); break;
    case wire::SchedulerToExecutor::kWork: hooks_.work(in.mutable_work()); break;
    case wire::SchedulerToExecutor::kHeartbeat: break;
    case wire::SchedulerToExecutor::kError: OnError(in.error(), now); break;
    default: TC_LOG(Warn) << o_.peer << " message without a body; ignored"; break;
  }
}

// A stale message does not count as hearing from the scheduler either: one
// that only a deposed leader answers is left after the loss timeout.
bool ExecutorSession::TermCurrent(uint64_t term, const char* what, double now) {
  if (term == 0) return true;  // a single scheduler
  if (term >= term_seen_) {
    term_seen_ = term;
    stale_since_ = -1;
    return true;
  }
  if (stale_since_ < 0) stale_since_ = now;
  if (now - stale_since_ >= kStaleGroupLosses * lost_after_s_) {
    TC_LOG(Warn) << o_.peer << " " << endpoint() << " still answers from term " << term << ", below term " << term_seen_
                 << ", after " << now - stale_since_ << " s: taking it for a new replica group";
    term_seen_ = term;
    stale_since_ = -1;
    return true;
  }
  stale_ignored_++;
  if (now - last_stale_log_ >= kLogEveryS) {
    last_stale_log_ = now;
    TC_LOG(Warn) << "ignored a " << what << " from " << o_.peer << " " << endpoint() << " in term " << term
                 << ": a leader of term " << term_seen_ << " has been heard, so this one was deposed";
  }
  return false;
}

void ExecutorSession::OnRegistered(const wire::RegisterAck& ack, double now) {
  const bool first = state_ != State::kRegistered;
  state_ = State::kRegistered;
  register_unsent_ = false;
  register_tries_ = 0;
  executor_id_ = ack.executor_id();
  heartbeat_s_ = (ack.heartbeat_interval_ms() ? ack.heartbeat_interval_ms() : o_.heartbeat_ms) / 1000.0;
  lost_after_s_ = o_.lost_after_ms          ? o_.lost_after_ms / 1000.0
                  : ack.lost_after_ms() > 0 ? ack.lost_after_ms() / 1000.0
                                            : 10 * heartbeat_s_;
  next_heartbeat_ = now + heartbeat_s_;
  backoff_s_ = o_.register_retry_s;
  // The Register carried these results: they are delivered.
  const int delivered = std::min(results_in_register_, outbox_.results_size());
  if (delivered > 0) outbox_.mutable_results()->DeleteSubrange(0, delivered);
  results_in_register_ = 0;
  if (hooks_.registered) hooks_.registered(ack, first);
}

void ExecutorSession::OnError(const wire::Error& e, double now) {
  if (e.code() == wire::Error::NOT_LEADER && !e.leader_endpoint().empty()) {
    auto it = std::find(endpoints_.begin(), endpoints_.end(), e.leader_endpoint());
    if (it != endpoints_.end()) {
      if (it - endpoints_.begin() != static_cast<long>(current_))
        MoveTo(static_cast<size_t>(it - endpoints_.begin()), o_.peer + " " + endpoint() + " does not lead", now);
      return;
    }
    if (now - last_error_log_ >= kLogEveryS) {
      last_error_log_ = now;
      TC_LOG(Warn) << o_.peer << " " << endpoint() << " names its leader " << e.leader_endpoint() << ", which this "
                   << o_.self << "'s endpoint list does not hold: add it";
    }
    return;
  }
  if (e.code() == wire::Error::UNKNOWN_EXECUTOR) {
    // Answers to Reports sent before our Register: it is on its way.
    if (state_ == State::kRegistering) return;
    Lost(o_.peer + " does not know this " + o_.self + " (restarted?): " + e.message(), now);
    return;
  }
  if (now - last_error_log_ < kLogEveryS) return;
  last_error_log_ = now;
  const std::string& code = wire::Error::Code_Name(e.code());
  TC_LOG(Warn) << o_.peer << " error " << (code.empty() ? "?" : code) << ": " << e.message();
}

// Register anew, keeping our attempts: the Register lists them and the
// scheduler adopts what it still wants (or tells us to cancel the rest).
void ExecutorSession::Lost(const std::string& why, double now) {
  state_ = State::kRegistering;
  register_tries_ = 0;
  backoff_s_ = o_.register_retry_s;
  TC_LOG(Warn) << why << "; registering again" << (hooks_.holding ? ", keeping " + hooks_.holding() : "");
  Register(now);
}

void ExecutorSession::MoveTo(size_t next, const std::string& why, double now) {
  current_ = next;
  // A new socket, not disconnect + connect: with ZMQ_IMMEDIATE the pipe of
  // the endpoint left is still writable while it closes, and the Register
  // sent next went into it and was lost (libzmq 4.3), every move away
  // from a live replica, until the loss timeout moved on again: in the
  // replica soak both executors missed a new leader for 10 s and its jobs
  // failed for want of executors. Nothing queued is lost: Reports wait in
  // the outbox and the Register carries what the executor holds.
  if (Status s = OpenSocket(); !s.ok()) TC_LOG(Error) << s.message();
  Lost(why + "; moving to " + endpoint(), now);
}

void ExecutorSession::Register(double now) {
  wire::ExecutorMessage msg;
  msg.set_version(kProtocolVersion);
  wire::Register* reg = msg.mutable_register_();
  if (!hooks_.offer(reg)) {  // nothing to offer yet
    next_register_ = now + heartbeat_s_;
    return;
  }
  reg->set_name(o_.name);
  reg->set_host(HostName());
  // What we hold goes with it (docs/PROTOCOL.md, "Registering again").
  outbox_.clear_started();  // `running` says which started
  for (const wire::AttemptResult& r : sent_results_) *reg->add_undelivered() = r;
  for (const wire::AttemptResult& r : outbox_.results()) *reg->add_undelivered() = r;
  register_unsent_ = !Send(msg);
  if (!register_unsent_) results_in_register_ = outbox_.results_size();
  if (register_tries_ == 0) {
    TC_LOG(Info) << "registering with the " << o_.peer << " at " << endpoint();
    waiting_since_ = last_wait_log_ = now;
  } else if (now - last_wait_log_ >= kWaitLogEveryS) {
    TC_LOG(Info) << "waiting for the " << o_.peer << " at " << endpoint() << "... ("
                 << static_cast<int64_t>(now - waiting_since_) << " s)";
    last_wait_log_ = now;
  }
  ++register_tries_;
  next_register_ = now + backoff_s_;
  backoff_s_ = std::min(o_.max_backoff_s, backoff_s_ * 2);
}

void ExecutorSession::OnWritable(double now) {
  if (register_unsent_ && state_ == State::kRegistering) Register(now);
}

void ExecutorSession::Tick(double now) {
  // A refused key fails silently in ZeroMQ (it redials for ever): say so.
  // A definitive cause (keys refused, wanted or not used) is logged at
  // once even when a vaguer line (connections closed mid-handshake) was
  // logged just before: it says what to change.
  bool definitive = false;
  if (std::string why = handshake_ ? handshake_->TakeFailure(&definitive) : "";
      !why.empty() && (now - last_handshake_log_ >= kLogEveryS || (definitive && !handshake_logged_definitive_))) {
    last_handshake_log_ = now;
    handshake_logged_definitive_ = definitive;
    TC_LOG(Error) << o_.peer << " " << endpoint() << ": " << why << "; still trying";
  }
  const std::string silent =
      " for " + std::to_string(static_cast<int64_t>(lost_after_s_ * 1000)) + " ms at " + endpoint();
  if (state_ == State::kRegistering) {
    // With replicas: one that does not answer at all may be gone; the next may lead.
    if (endpoints_.size() > 1 && register_tries_ > 0 && now - waiting_since_ >= lost_after_s_)
      return MoveTo((current_ + 1) % endpoints_.size(), "no answer from the " + o_.peer + silent, now);
    if (now >= next_register_) Register(now);
    return;
  }
  if (now - last_heard_ >= lost_after_s_) {
    if (endpoints_.size() > 1)
      return MoveTo((current_ + 1) % endpoints_.size(), "no word from the " + o_.peer + silent, now);
    Lost("no word from the " + o_.peer + silent, now);
    return;
  }
  if (now < next_heartbeat_) return;
  next_heartbeat_ = now + heartbeat_s_;
  Flush(/*heartbeat=*/true);
}

void ExecutorSession::Flush(bool heartbeat) {
  if (state_ != State::kRegistered || (!heartbeat && OutboxEmpty())) return;
  wire::ExecutorMessage msg;
  msg.set_version(kProtocolVersion);
  wire::Report* report = msg.mutable_report();
  report->Swap(&outbox_);
  if (hooks_.report) hooks_.report(report, heartbeat);
  if (Send(msg)) {
    held_output_bytes_ = 0;  // handed to ZeroMQ
    for (wire::AttemptResult& r : *report->mutable_results()) {
      sent_bytes_ += r.output().size() + r.error().size();
      sent_results_.push_back(std::move(r));
    }
    while (!sent_results_.empty() && (sent_results_.size() > kSentKept || sent_bytes_ > kSentKeptBytes)) {
      sent_bytes_ -= sent_results_.front().output().size() + sent_results_.front().error().size();
      sent_results_.pop_front();
    }
    return;
  }
  // No connection right now: keep the events (not the stale progress).
  report->clear_progress();
  report->clear_signals();
  outbox_.Swap(report);
}

double ExecutorSession::NextTimer() const {
  return state_ == State::kRegistered ? std::min(next_heartbeat_, last_heard_ + lost_after_s_) : next_register_;
}

void ExecutorSession::Reregister(double now) {
  state_ = State::kRegistering;
  backoff_s_ = o_.register_retry_s;
  Register(now);
}

void ExecutorSession::Leave(const std::string& reason, double now) {
  wire::ExecutorMessage bye;
  bye.set_version(kProtocolVersion);
  bye.mutable_goodbye()->set_reason(reason);
  (void)Send(bye);
  outbox_.Clear();
  held_output_bytes_ = 0;
  results_in_register_ = 0;
  state_ = State::kRegistering;
  backoff_s_ = o_.register_retry_s;
  next_register_ = now + heartbeat_s_;
}

void ExecutorSession::Goodbye(const std::string& reason, int linger_ms) {
  if (state_ != State::kRegistered) return;
  wire::ExecutorMessage bye;
  bye.set_version(kProtocolVersion);
  bye.mutable_goodbye()->set_reason(reason);
  // A short linger lets the Goodbye out without hanging on a dead peer.
  if (Send(bye)) socket_.set(zmq::sockopt::linger, linger_ms);
}

}  // namespace tailcut
