#include "parent_link.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "tailcut/common/log.h"
#include "tailcut/wire/wire.h"
#include "wire_convert.h"

namespace tailcut {
namespace {

constexpr const char* kOwnerPrefix = "parent:";
// Parent jobs remembered as closed by the edge quorum (tasks of theirs that
// arrive later run without a second close, so nothing bounces for ever).
constexpr size_t kClosedMemory = 4096;
// Register retries back off from the heartbeat interval up to this.
constexpr double kMaxBackoffS = 5.0;
// Warnings about the parent are logged at most this often.
constexpr double kLogEveryS = 10.0;

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

std::string RandomSuffix() {
  static const char kHex[] = "0123456789abcdef";
  std::random_device rd;
  std::string s;
  for (int i = 0; i < 8; ++i) s += kHex[rd() & 15];
  return s;
}

}  // namespace

std::string ParentOwner(const std::string& edge_name) { return kOwnerPrefix + edge_name; }
bool IsParentOwner(const std::string& owner) { return owner.rfind(kOwnerPrefix, 0) == 0; }

ParentLink::ParentLink(ParentOptions options, uint32_t max_message_bytes, zmq::context_t& ctx, Host host)
    : o_(std::move(options)),
      max_message_bytes_(max_message_bytes),
      ctx_(ctx),
      host_(std::move(host)),
      heartbeat_s_(o_.heartbeat_ms / 1000.0),
      lost_after_s_(10 * heartbeat_s_),
      backoff_s_(heartbeat_s_) {
  if (o_.name.empty()) o_.name = "edge-" + HostName() + "-" + std::to_string(getpid());
}

ParentLink::~ParentLink() {
  handshake_.reset();
  if (socket_) socket_.close();
}

Status ParentLink::Connect() {
  try {
    socket_ = zmq::socket_t(ctx_, zmq::socket_type::dealer);
    socket_.set(zmq::sockopt::routing_id, o_.name + "/" + RandomSuffix());
    // As an executor's socket (executor/src/executor.cpp): queue only to a
    // live connection, unsent news waits in pending_; ZMTP heartbeats close
    // half-open connections so they are dialled again.
    socket_.set(zmq::sockopt::immediate, 1);
    socket_.set(zmq::sockopt::linger, 0);
    socket_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(max_message_bytes_));
    socket_.set(zmq::sockopt::heartbeat_ivl, static_cast<int>(o_.heartbeat_ms));
    socket_.set(zmq::sockopt::heartbeat_timeout, std::max(10000, static_cast<int>(20 * o_.heartbeat_ms)));
    if (Status s = ApplyPeerKeys(socket_, {o_.key_file, o_.parent_key}); !s.ok())
      return Status::InvalidArgument("parent keys: " + s.message());
    if (o_.key_file.empty() && !IsLocalOnlyEndpoint(o_.endpoint))
      TC_LOG(Warn) << "no parent keys: the link to " << o_.endpoint
                   << " is neither encrypted nor proven to reach the real parent (docs/SECURITY.md)";
    handshake_ = std::make_unique<HandshakeMonitor>(ctx_, socket_, !o_.key_file.empty());
    socket_.connect(o_.endpoint);
  } catch (const zmq::error_t& e) {
    return Status::IoError("parent " + o_.endpoint + ": " + e.what());
  }
  TC_LOG(Info) << "edge " << o_.name << ": parent scheduler at " << o_.endpoint
               << (o_.edge_quorum > 0 ? ", edge quorum " + std::to_string(o_.edge_quorum) : "");
  return Status::Ok();
}

bool ParentLink::Send(const wire::ExecutorMessage& msg) {
  try {
    return socket_.send(ToFrame(msg), zmq::send_flags::dontwait).has_value();
  } catch (const zmq::error_t& e) {
    TC_LOG(Warn) << "send to parent failed: " << e.what();
    return false;
  }
}

// ------------------------------------------------------------ from above --

void ParentLink::OnReadable(double now) {
  for (int i = 0; i < 4096; ++i) {
    zmq::message_t frame;
    if (!socket_.recv(frame, zmq::recv_flags::dontwait)) break;
    if (frame.more()) {  // one frame per message; swallow the rest
      while (frame.more() && socket_.recv(frame, zmq::recv_flags::dontwait)) {
      }
      TC_LOG(Warn) << "multi-frame message from the parent; ignored";
      continue;
    }
    Handle(frame, now);
  }
}

void ParentLink::Handle(const zmq::message_t& frame, double now) {
  wire::SchedulerToExecutor in;
  if (!FromFrame(frame, &in)) {
    TC_LOG(Warn) << "malformed frame from the parent (" << frame.size() << " bytes); ignored";
    return;
  }
  if (in.version() != kProtocolVersion) {
    TC_LOG(Warn) << "parent speaks protocol version " << in.version() << "; ignored";
    return;
  }
  last_heard_ = now;
  switch (in.body_case()) {
    case wire::SchedulerToExecutor::kRegistered: {
      const wire::RegisterAck& ack = in.registered();
      if (ack.heartbeat_interval_ms() > 0) heartbeat_s_ = ack.heartbeat_interval_ms() / 1000.0;
      lost_after_s_ = ack.lost_after_ms() > 0 ? ack.lost_after_ms() / 1000.0 : 10 * heartbeat_s_;
      if (state_ != State::kRegistered || !ever_registered_)
        TC_LOG(Info) << "registered with the parent as executor " << ack.executor_id() << " ("
                     << registered_fleet_.slots << " slots of " << registered_fleet_.executors << " executors)";
      state_ = State::kRegistered;
      ever_registered_ = true;
      backoff_s_ = heartbeat_s_;
      next_heartbeat_ = now + heartbeat_s_;
      // The Register carried these results: they are delivered.
      int delivered = std::min(results_in_register_, pending_.results_size());
      if (delivered > 0) pending_.mutable_results()->DeleteSubrange(0, delivered);
      results_in_register_ = 0;
      break;
    }
    case wire::SchedulerToExecutor::kWork: {
      wire::Work* w = in.mutable_work();
      for (wire::Assignment& a : *w->mutable_assign()) Accept(a);
      for (uint64_t id : w->cancel()) CancelFromParent(id);
      break;
    }
    case wire::SchedulerToExecutor::kHeartbeat: break;
    case wire::SchedulerToExecutor::kError:
      if (in.error().code() == wire::Error::UNKNOWN_EXECUTOR) {
        if (state_ == State::kRegistered) Lost("the parent does not know this edge (restarted?)", now);
      } else if (now - last_log_ >= kLogEveryS) {
        last_log_ = now;
        TC_LOG(Warn) << "parent error " << wire::Error::Code_Name(in.error().code()) << ": " << in.error().message();
      }
      break;
    default: break;
  }
}

void ParentLink::Accept(wire::Assignment& a) {
  const AttemptId id = a.attempt_id();
  if (held_.count(id)) return;  // a repeat: it runs already
  auto refuse = [&](const std::string& why) {
    wire::AttemptResult* r = pending_.add_results();
    r->set_attempt_id(id);
    r->set_outcome(wire::AttemptResult::REFUSED);
    r->set_error(why);
    r->set_job_id(a.job_id());
    r->set_task_index(a.task_index());
  };
  if (!a.output_dir().empty()) {  // its promotion would need this edge's executors' disks: not offered
    refuse("edge " + o_.name + ": jobs with output_dir do not run through an edge scheduler (docs/EDGE.md)");
    pending_.mutable_results()->rbegin()->set_outcome(wire::AttemptResult::FAILED);
    return;
  }
  if (held_.size() >= o_.max_tasks)
    return refuse("edge " + o_.name + " holds " + std::to_string(held_.size()) +
                  " parent tasks, scheduler.parent_max_tasks = " + std::to_string(o_.max_tasks));
  wire::JobSpec spec;
  spec.set_name("parent job " + std::to_string(a.job_id()) + " task " + std::to_string(a.task_index()));
  wire::TaskSpec* t = spec.add_tasks();
  t->set_kernel(std::move(*a.mutable_kernel()));
  t->set_args(std::move(*a.mutable_args()));
  *t->mutable_demand() = a.demand();
  if (a.has_share()) *t->mutable_share() = a.share();  // the parent's share of a divisible job, run as is
  spec.set_stream_results(true);  // the commit comes back as TaskCommittedCmd with its output
  spec.set_owner(ParentOwner(o_.name));
  auto local = host_.submit(std::move(spec));
  if (!local.ok()) return refuse("edge " + o_.name + ": " + local.status().message());
  Held h;
  h.local = *local;
  h.parent_job = a.job_id();
  h.task = a.task_index();
  held_.emplace(id, std::move(h));
  by_local_job_[*local] = id;
  Group& g = groups_[a.job_id()];
  ++g.received;
  ++g.held;
}

void ParentLink::CancelFromParent(AttemptId a) {
  auto it = held_.find(a);
  if (it == held_.end()) return;
  JobId local = it->second.local;
  Forget(a);  // before cancelling: its JobFinished is then not reported
  host_.cancel(local, "cancelled by the parent scheduler");
}

// Drops what the link holds for parent attempt `a`.
void ParentLink::Forget(AttemptId a) {
  auto it = held_.find(a);
  if (it == held_.end()) return;
  by_local_job_.erase(it->second.local);
  for (AttemptId l : it->second.local_attempts) by_local_attempt_.erase(l);
  if (auto g = groups_.find(it->second.parent_job); g != groups_.end() && --g->second.held == 0) groups_.erase(g);
  held_.erase(it);
}

void ParentLink::AddResult(AttemptId a, const Held& h, wire::AttemptResult::Outcome outcome, std::string output,
                           std::string error, double run_s) {
  // Outputs held for the parent are capped like an executor's (half a
  // message), so a long parent outage cannot grow the edge's memory.
  const uint64_t size = output.size() + error.size();
  if (size > 0 && held_output_bytes_ + size > max_message_bytes_ / 2) {
    outcome = wire::AttemptResult::REFUSED;
    error = "edge output memory full: " + std::to_string(held_output_bytes_) + " + " + std::to_string(size) +
            " bytes not yet sent to the parent";
    output.clear();
  }
  held_output_bytes_ += output.size() + error.size();
  wire::AttemptResult* r = pending_.add_results();
  r->set_attempt_id(a);
  r->set_outcome(outcome);
  r->set_output(std::move(output));
  r->set_error(std::move(error));
  r->set_run_s(run_s);
  r->set_job_id(h.parent_job);
  r->set_task_index(h.task);
}

void ParentLink::OnCommand(const Command& c) {
  if (auto* l = std::get_if<LaunchCmd>(&c)) {
    auto it = by_local_job_.find(l->job);
    if (it == by_local_job_.end()) return;
    held_[it->second].local_attempts.push_back(l->attempt);
    by_local_attempt_[l->attempt] = it->second;
  } else if (auto* tc = std::get_if<TaskCommittedCmd>(&c)) {
    auto it = by_local_job_.find(tc->job);
    if (it == by_local_job_.end()) return;
    AttemptId a = it->second;
    Held& h = held_.at(a);
    uint64_t parent_job = h.parent_job;
    // The committed attempt's own run time: the parent's predictors then
    // see this edge as fast as the device that ran it.
    AddResult(a, h, wire::AttemptResult::OK, tc->output, "", tc->run_s);
    if (auto g = groups_.find(parent_job); g != groups_.end()) ++g->second.committed;
    Forget(a);
    MaybeCloseEdgeQuorum(parent_job);
  } else if (auto* f = std::get_if<JobFinishedCmd>(&c)) {
    auto it = by_local_job_.find(f->job);
    if (it == by_local_job_.end()) return;  // committed (reported) or cancelled by the parent
    AttemptId a = it->second;
    // Failed here after the edge's own retries: one failed attempt for the
    // parent. Cancelled here (a shutdown, a time limit): handed back.
    auto outcome = f->state == JobState::kFailed ? wire::AttemptResult::FAILED : wire::AttemptResult::REFUSED;
    AddResult(a, held_.at(a), outcome, "", "edge " + o_.name + ": " + f->reason, 0);
    Forget(a);
  }
}

void ParentLink::MaybeCloseEdgeQuorum(uint64_t parent_job) {
  if (o_.edge_quorum <= 0 || closed_.count(parent_job)) return;
  auto g = groups_.find(parent_job);
  if (g == groups_.end()) return;  // nothing left here to close
  const Group counts = g->second;
  if (counts.committed < std::ceil(o_.edge_quorum * counts.received - 1e-9)) return;
  closed_.insert(parent_job);
  closed_order_.push_back(parent_job);
  if (closed_order_.size() > kClosedMemory) {
    closed_.erase(closed_order_.front());
    closed_order_.pop_front();
  }
  std::vector<AttemptId> rest;
  for (auto& [a, h] : held_)
    if (h.parent_job == parent_job) rest.push_back(a);
  std::sort(rest.begin(), rest.end());  // a deterministic order for the log and the parent
  const std::string why = "edge quorum: edge " + o_.name + " closed its part of job " + std::to_string(parent_job) +
                          " at " + std::to_string(counts.committed) + " of " + std::to_string(counts.received) +
                          " tasks; handed back";
  for (AttemptId a : rest) {
    const Held h = held_.at(a);
    AddResult(a, h, wire::AttemptResult::REFUSED, "", why, 0);
    Forget(a);
    host_.cancel(h.local, why);
  }
  TC_LOG(Debug) << why << " (" << rest.size() << ")";
}

void ParentLink::OnLocalReport(const wire::Report& r) {
  for (const wire::AttemptStarted& s : r.started()) {
    auto it = by_local_attempt_.find(s.attempt_id());
    if (it == by_local_attempt_.end()) continue;
    Held& h = held_.at(it->second);
    if (h.started) continue;
    h.started = true;
    pending_.add_started()->set_attempt_id(it->second);
  }
  for (const wire::AttemptProgress& p : r.progress()) {
    auto it = by_local_attempt_.find(p.attempt_id());
    if (it == by_local_attempt_.end() || !(p.fraction() >= 0 && p.fraction() <= 1)) continue;
    Held& h = held_.at(it->second);
    h.progress = std::max(h.progress, p.fraction());  // the most advanced copy
  }
}

// ------------------------------------------------------------- upward --

void ParentLink::Flush() {
  if (state_ != State::kRegistered || (pending_.started_size() == 0 && pending_.results_size() == 0)) return;
  wire::ExecutorMessage msg;
  msg.set_version(kProtocolVersion);
  msg.mutable_report()->Swap(&pending_);
  if (Send(msg)) {
    held_output_bytes_ = 0;
    return;
  }
  pending_.Swap(msg.mutable_report());  // no connection now: kept for the next turn or the Register
}

void ParentLink::SendRegister(const FleetSummary& fleet, double now) {
  wire::ExecutorMessage msg;
  msg.set_version(kProtocolVersion);
  wire::Register* reg = msg.mutable_register_();
  reg->set_name(o_.name);
  reg->set_host(HostName());
  reg->set_cpu_slots(fleet.slots);
  for (uint32_t i = 0; i < fleet.gpus; ++i) {
    wire::GpuInfo* g = reg->add_gpus();
    g->set_index(i);
    g->set_name("edge fleet GPU");
  }
  (*reg->mutable_labels())["tier"] = "edge";
  for (const std::string& k : fleet.kernels) reg->add_kernels(k);
  // What we hold goes with it: the parent adopts what it still wants.
  pending_.clear_started();  // `running` says which started
  for (const auto& [a, h] : held_) {
    wire::HeldAttempt* x = reg->add_running();
    x->set_attempt_id(a);
    x->set_job_id(h.parent_job);
    x->set_task_index(h.task);
    x->set_started(h.started);
  }
  for (const wire::AttemptResult& r : pending_.results()) *reg->add_undelivered() = r;
  if (Send(msg)) {
    results_in_register_ = pending_.results_size();
    registered_fleet_ = fleet;
  }
  next_register_ = now + backoff_s_;
  backoff_s_ = std::min(kMaxBackoffS, backoff_s_ * 2);
}

void ParentLink::SendGoodbye(const std::string& reason) {
  wire::ExecutorMessage bye;
  bye.set_version(kProtocolVersion);
  bye.mutable_goodbye()->set_reason(reason);
  (void)Send(bye);
}

void ParentLink::Lost(const std::string& why, double now) {
  state_ = State::kRegistering;
  backoff_s_ = heartbeat_s_;
  next_register_ = now;
  TC_LOG(Warn) << "parent " << o_.endpoint << ": " << why << "; registering again, keeping " << held_.size()
               << " parent tasks (local clients are served as before)";
}

void ParentLink::Tick(double now) {
  // A refused key fails silently in ZeroMQ (it redials for ever): say so.
  if (std::string why = handshake_ ? handshake_->TakeFailure() : ""; !why.empty() && now - last_log_ >= kLogEveryS) {
    last_log_ = now;
    TC_LOG(Error) << "parent " << o_.endpoint << ": " << why << "; still trying";
  }
  if (state_ == State::kRegistering) {
    if (now < next_register_) return;
    FleetSummary fleet = host_.fleet();
    if (fleet.slots == 0) {  // nothing to offer yet
      next_register_ = now + heartbeat_s_;
      return;
    }
    SendRegister(fleet, now);
    return;
  }
  if (now - last_heard_ >= lost_after_s_) {
    Lost("no word for " + std::to_string(lost_after_s_) + " s", now);
    return;
  }
  if (now < next_heartbeat_) return;
  next_heartbeat_ = now + heartbeat_s_;
  FleetSummary fleet = host_.fleet();
  if (fleet != registered_fleet_) {
    if (fleet.slots == 0) {
      // No executor left: the parent re-places what we held at once.
      TC_LOG(Warn) << "edge fleet empty: leaving the parent until executors return";
      SendGoodbye("edge has no executors");
      std::vector<AttemptId> all;
      for (auto& [a, h] : held_) all.push_back(a);
      for (AttemptId a : all) CancelFromParent(a);
      pending_.Clear();
      held_output_bytes_ = 0;
      state_ = State::kRegistering;
      registered_fleet_ = FleetSummary{};
      next_register_ = now + heartbeat_s_;
      return;
    }
    TC_LOG(Info) << "edge fleet changed (" << registered_fleet_.slots << " -> " << fleet.slots
                 << " slots): registering again with the parent";
    state_ = State::kRegistering;
    backoff_s_ = heartbeat_s_;
    SendRegister(fleet, now);
    return;
  }
  // The heartbeat: progress of the parent's tasks and the load.
  wire::ExecutorMessage msg;
  msg.set_version(kProtocolVersion);
  wire::Report* r = msg.mutable_report();
  r->Swap(&pending_);
  uint32_t running = 0;
  for (const auto& [a, h] : held_) {
    running += h.started;
    if (h.progress < 0) continue;
    wire::AttemptProgress* p = r->add_progress();
    p->set_attempt_id(a);
    p->set_fraction(h.progress);
  }
  r->mutable_signals()->set_load(registered_fleet_.slots ? static_cast<double>(running) / registered_fleet_.slots : 0);
  if (Send(msg)) {
    held_output_bytes_ = 0;
    return;
  }
  r->clear_progress();
  r->clear_signals();
  pending_.Swap(r);
}

void ParentLink::Shutdown() {
  if (state_ == State::kRegistered) {
    SendGoodbye("edge scheduler shutting down");
    socket_.set(zmq::sockopt::linger, 500);
  }
}

}  // namespace tailcut
