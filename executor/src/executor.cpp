// Executor: the ZeroMQ side. One thread polls the scheduler socket and an
// eventfd; kernels run on the AttemptRuntime's workers and never block it.
#include "tailcut/executor/executor.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <random>
#include <thread>
#include <unordered_map>

#include <zmq.hpp>

#include "gpu_detect.h"
#include "gpu_signals.h"
#include "tailcut/common/log.h"
#include "tailcut/wire/security.h"
#include "tailcut/wire/wire.h"
#include "tailcut/executor/runtime.h"

namespace tailcut::executor {
namespace {

using SteadyClock = std::chrono::steady_clock;
using TimePoint = SteadyClock::time_point;
using Millis = std::chrono::milliseconds;

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

std::string RandomHex(int digits) {
  static const char kHex[] = "0123456789abcdef";
  std::random_device rd;
  std::string s;
  for (int i = 0; i < digits; ++i) s += kHex[rd() & 15];
  return s;
}

// "noop, sleep,matmul" -> {"noop", "sleep", "matmul"}; "" -> none.
std::vector<std::string> SplitKernelList(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = std::min(text.find(',', start), text.size());
    std::string name = text.substr(start, end - start);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    start = end + 1;
  }
  return out;
}

constexpr int64_t kMinMessageBytes = 64 * 1024;

const char* ErrorCodeName(wire::Error::Code code) {
  const std::string& n = wire::Error::Code_Name(code);
  return n.empty() ? "?" : n.c_str();
}

}  // namespace

// ------------------------------------------------------------- options --

// Kernels that run whatever code the scheduler sends (docs/SECURITY.md).
Status CheckShellTrust(const ExecutorOptions& o) {
  if (!o.scheduler_key.empty() || o.trust_unauthenticated_scheduler) return Status::Ok();
  for (const char* k : {"shell", "exec", "python"}) {
    if (std::find(o.allow_kernels.begin(), o.allow_kernels.end(), k) == o.allow_kernels.end()) continue;
    return Status::InvalidArgument(
        std::string("the ") + k + " kernel runs any code its scheduler sends, and without scheduler_key "
        "(--scheduler-key) this executor cannot tell its scheduler from anything answering on " + o.scheduler +
        ": give it the scheduler's key, or start it with --trust-unauthenticated-scheduler");
  }
  return Status::Ok();
}

StatusOr<ExecutorOptions> ExecutorOptionsFromConfig(const Config& c) {
  ExecutorOptions o;
  int64_t max_output_bytes = 0, seed = 0, max_message_bytes = static_cast<int64_t>(o.max_message_bytes);
  TableReader t(c, "");
  t.Get("scheduler", &o.scheduler)
      .Get("name", &o.name)
      .Get("slots", &o.slots)
      .Get("threads", &o.threads)
      .Get("heartbeat_ms", &o.heartbeat_ms)
      .Get("lost_after_ms", &o.lost_after_ms)
      .Get("register_retry_ms", &o.register_retry_ms)
      .Get("goodbye_linger_ms", &o.goodbye_linger_ms)
      .Get("max_output_bytes", &max_output_bytes)
      .Get("max_message_bytes", &max_message_bytes)
      .Get("max_queued", &o.max_queued)
      .Get("key_file", &o.key_file)
      .Get("scheduler_key", &o.scheduler_key)
      .Get("trust_unauthenticated_scheduler", &o.trust_unauthenticated_scheduler)
      .Get("faults.slowdown", &o.faults.slowdown)
      .Get("faults.fail_slow_after_s", &o.faults.fail_slow_after_s)
      .Get("faults.fail_slow_factor", &o.faults.fail_slow_factor)
      .Get("faults.delay_prob", &o.faults.delay_prob)
      .Get("faults.delay_ms", &o.faults.delay_ms)
      .Get("faults.crash_after_s", &o.faults.crash_after_s)
      .Get("faults.seed", &seed)
      .Get("allow_python", &o.python.allow)
      .Get("python", &o.python.interpreter)
      .Get("python_path", &o.python.path)
      .Get("python_max_tasks", &o.python.max_tasks)
      .Get("python_max_rss_mb", &o.python.max_rss_mb);
  if (t.Has("python_preload")) {
    std::string preload;
    t.Get("python_preload", &preload);
    o.python.preload = SplitKernelList(preload);  // the same comma-separated list
  }
  for (const std::string& key : c.Children("labels")) t.Get("labels." + key, &o.labels[key]);
  if (t.Has("allow_kernels")) {  // absent: the default list
    std::string allow;
    t.Get("allow_kernels", &allow);
    o.allow_kernels = SplitKernelList(allow);
  }
  // The daemon runs the built-ins: an unknown name is a config error now, not a failed Run later.
  // `python` is enabled by allow_python, not by the list; naming it there is the same.
  if (std::erase(o.allow_kernels, "python") > 0) o.python.allow = true;
  if (Status s = BuiltinKernels().Restrict(o.allow_kernels); !s.ok())
    t.Also(Status::InvalidArgument("allow_kernels: " + s.message()));
  if (o.python.allow) o.allow_kernels.push_back("python");
  t.Also(ValidateEndpoint(o.scheduler))
      .Also(CheckShellTrust(o))
      .Check(o.key_file.empty() == o.scheduler_key.empty(),
             "key_file and scheduler_key go together: this executor's key and the scheduler's public key")
      .Check(o.heartbeat_ms > 0, "heartbeat_ms must be > 0")
      .Check(max_output_bytes >= 0, "max_output_bytes must be >= 0 (0 = no cap)")
      .Check(max_message_bytes >= kMinMessageBytes && max_message_bytes <= INT32_MAX,
             "max_message_bytes must be in " + std::to_string(kMinMessageBytes) + ".." + std::to_string(INT32_MAX))
      .Check(max_output_bytes <= max_message_bytes / 2,
             "max_output_bytes must be at most half of max_message_bytes (" + std::to_string(max_message_bytes) +
                 "): a Report carries them")
      .Check(!o.python.interpreter.empty(), "python must name an interpreter (default /usr/bin/python3)")
      .Check(o.faults.slowdown > 0 && o.faults.fail_slow_factor > 0,
             "faults.slowdown and faults.fail_slow_factor must be > 0")
      .Check(o.faults.delay_prob >= 0 && o.faults.delay_prob <= 1, "faults.delay_prob must be in [0, 1]")
      .Check(o.faults.delay_ms >= 0 && o.faults.fail_slow_after_s >= 0 && o.faults.crash_after_s >= 0,
             "faults.delay_ms, fail_slow_after_s and crash_after_s must be >= 0");
  if (!t.status().ok()) return t.status();
  o.max_output_bytes = static_cast<uint64_t>(max_output_bytes);
  o.max_message_bytes = static_cast<uint64_t>(max_message_bytes);
  o.faults.seed = static_cast<uint64_t>(seed);
  return o;
}

ExecutorOptions ResolveDefaults(ExecutorOptions o) {
  const uint32_t cores = std::max(1u, std::thread::hardware_concurrency());
  if (o.slots == 0) o.slots = cores;
  if (o.threads == 0) o.threads = cores;
  o.threads = std::min(o.threads, o.slots);  // a thread without a slot idles
  if (o.name.empty()) o.name = HostName() + ":" + std::to_string(getpid());
  if (o.register_retry_ms == 0) o.register_retry_ms = 1000;
  if (o.heartbeat_ms == 0) o.heartbeat_ms = 1000;
  // A Report carries the result: what one may hold, less room for its envelope.
  const uint64_t output_cap = o.max_output_bytes ? o.max_output_bytes : o.max_message_bytes / 2;
  o.python.max_result_bytes = output_cap > 65536 ? output_cap - 65536 : output_cap;
  return o;
}

// ---------------------------------------------------------------- loop --

class Executor::Loop {
 public:
  Loop(Executor* ex, const ExecutorOptions& o)
      : ex_(ex),
        o_(o),
        faults_(o.faults),
        runtime_(RuntimeOptions{o.slots, o.threads}, &ex->kernels_, &faults_, [ex] { ex->Wake(); }),
        start_(SteadyClock::now()),
        heartbeat_(Millis(o.heartbeat_ms)),
        lost_after_(Millis(o.lost_after_ms ? o.lost_after_ms : 10 * o.heartbeat_ms)) {}

  Status Run() {
    socket_ = zmq::socket_t(context_, zmq::socket_type::dealer);
    // Same identity across reconnects, unique across executors.
    socket_.set(zmq::sockopt::routing_id, o_.name + "/" + RandomHex(8));
    // Unlimited: a full queue refuses (never drops) a Report, which then
    // waits in pending_. With max_output_bytes, ZeroMQ may hold at most
    // kCappedSendQueue Reports, so a slow link backs outputs up into
    // pending_, where the cap applies, instead of into ZeroMQ's queue.
    socket_.set(zmq::sockopt::sndhwm, o_.max_output_bytes ? kCappedSendQueue : 0);
    socket_.set(zmq::sockopt::rcvhwm, 0);
    socket_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(o_.max_message_bytes));
    // Queue only to a live connection: a Register retried while the scheduler
    // is down is not piled up; unsent Reports wait in pending_ instead.
    socket_.set(zmq::sockopt::immediate, 1);
    socket_.set(zmq::sockopt::linger, 0);
    // ZMTP heartbeats: a connection whose peer went away without a word
    // (a half-open TCP connection) is closed and dialled again; the
    // scheduler's ROUTER hands our routing id over to the new one. Twice the
    // loss timeout, so a stalled scheduler is re-registered with first;
    // PINGs at half of it, not at the heartbeat rate: liveness is the
    // Reports' job, and a PING per executor per interval costs the
    // scheduler's I/O thread (docs/PROTOCOL.md, "Heartbeats").
    const int zmtp_timeout = static_cast<int>(std::min<int64_t>(2 * lost_after_.count(), 600000));
    socket_.set(zmq::sockopt::heartbeat_ivl, std::max(static_cast<int>(o_.heartbeat_ms), zmtp_timeout / 2));
    socket_.set(zmq::sockopt::heartbeat_timeout, zmtp_timeout);
    socket_.set(zmq::sockopt::heartbeat_ttl, std::min(zmtp_timeout, 6553500));
    if (Status s = ApplyPeerKeys(socket_, {o_.key_file, o_.scheduler_key}); !s.ok()) return s;
    if (o_.key_file.empty() && !IsLocalOnlyEndpoint(o_.scheduler))
      TC_LOG(Warn) << "no keys: the link to " << o_.scheduler
                   << " is neither encrypted nor proven to reach the real scheduler (docs/SECURITY.md)";
    handshake_ = std::make_unique<HandshakeMonitor>(context_, socket_, !o_.key_file.empty());
    socket_.connect(o_.scheduler);
    TC_LOG(Info) << "executor " << o_.name << ": " << o_.slots << " slots on " << o_.threads
                 << " threads, kernels: " << (ex_->kernels_.Names().empty() ? "none" : ex_->kernels_.NamesList());
    if (ex_->kernels_.Find("shell"))
      TC_LOG(Warn) << "the shell kernel is enabled: any client of the scheduler can run commands as this user";
    if (ex_->kernels_.Find("python"))
      TC_LOG(Warn) << "the python kernel is enabled (Python " << ex_->python_version_ << ", " << o_.python.interpreter
                   << "): any client of the scheduler can run code as this user";
    if (o_.faults.any()) {
      const FaultOptions& f = o_.faults;
      TC_LOG(Warn) << "fault injection on: slowdown=" << f.slowdown << " fail_slow_after_s=" << f.fail_slow_after_s
                   << " fail_slow_factor=" << f.fail_slow_factor << " delay_prob=" << f.delay_prob
                   << " delay_ms=" << f.delay_ms << " crash_after_s=" << f.crash_after_s << " seed=" << f.seed;
    }
    SendRegister();
    while (!ex_->stop_requested_.load()) {
      if (faults_.CrashDue(ElapsedS())) {
        TC_LOG(Warn) << "fault injection: crashing now (crash_after_s=" << o_.faults.crash_after_s << ")";
        _exit(137);  // no Goodbye, no cleanup: a dead executor
      }
      bool want_out = register_unsent_ || pending_.started_size() > 0 || pending_.results_size() > 0;
      zmq::pollitem_t items[] = {
          {socket_.handle(), 0, static_cast<short>(ZMQ_POLLIN | (want_out ? ZMQ_POLLOUT : 0)), 0},
          {nullptr, ex_->wake_fd_, ZMQ_POLLIN, 0},
      };
      zmq::poll(items, 2, Millis(PollTimeout()));
      if (items[1].revents & ZMQ_POLLIN) {
        uint64_t n;
        [[maybe_unused]] ssize_t r = read(ex_->wake_fd_, &n, sizeof n);
      }
      if (items[0].revents & ZMQ_POLLIN) ReceiveAll();
      NoteHandshakeFailure();
      if (register_unsent_ && (items[0].revents & ZMQ_POLLOUT)) SendRegister();
      FlushEvents(/*heartbeat=*/false);
      OnTimers();
    }
    Shutdown();
    return Status::Ok();
  }

 private:
  enum class State { kRegistering, kRegistered };
  static constexpr int kCappedSendQueue = 2;

  double ElapsedS() const { return std::chrono::duration<double>(SteadyClock::now() - start_).count(); }

  long PollTimeout() const {
    TimePoint now = SteadyClock::now();
    TimePoint next = now + Millis(1000);
    if (state_ == State::kRegistered) {
      next = std::min({next, next_heartbeat_, last_heard_ + lost_after_});
    } else {
      next = std::min(next, next_register_);
    }
    if (o_.faults.crash_after_s > 0)
      next = std::min(next, start_ + std::chrono::duration_cast<SteadyClock::duration>(
                                         std::chrono::duration<double>(o_.faults.crash_after_s)));
    auto ms = std::chrono::duration_cast<Millis>(next - now).count() + 1;
    return std::max<long>(0, ms);
  }

  // True if the frame went out; false if no connection can take it now.
  bool Send(const wire::ExecutorMessage& msg) {
    return socket_.send(ToFrame(msg), zmq::send_flags::dontwait).has_value();
  }

  void SendRegister() {
    wire::ExecutorMessage msg;
    msg.set_version(kProtocolVersion);
    wire::Register* reg = msg.mutable_register_();
    reg->set_name(o_.name);
    reg->set_host(HostName());
    reg->set_cpu_slots(o_.slots);
    reg->set_max_queued(o_.max_queued);  // the scheduler queues no more than that here
    for (const wire::GpuInfo& g : DetectGpus()) *reg->add_gpus() = g;
    for (const auto& [k, v] : o_.labels) (*reg->mutable_labels())[k] = v;
    for (const std::string& k : ex_->kernels_.Names()) reg->add_kernels(k);
    if (ex_->kernels_.Find("python")) reg->set_python_version(ex_->python_version_);
    AddHeldWork(reg);
    register_unsent_ = !Send(msg);
    if (!register_unsent_) results_in_register_ = pending_.results_size();
    TimePoint now = SteadyClock::now();
    if (register_tries_ == 0) {
      TC_LOG(Info) << "registering with scheduler at " << o_.scheduler;
      waiting_since_ = now;
    } else if (now - last_wait_log_ >= Millis(5000)) {
      TC_LOG(Info) << "waiting for scheduler at " << o_.scheduler << "... ("
                   << std::chrono::duration_cast<std::chrono::seconds>(now - waiting_since_).count() << " s)";
      last_wait_log_ = now;
    }
    if (register_tries_ == 0) last_wait_log_ = now;
    ++register_tries_;
    next_register_ = now + Millis(o_.register_retry_ms);
  }

  // Registering again: the attempts we still hold, and the results the
  // scheduler has not seen, go with the Register (docs/PROTOCOL.md).
  void AddHeldWork(wire::Register* reg) {
    MoveEventsToPending();
    pending_.clear_started();  // `running` says which ones started
    for (auto& [id, running] : runtime_.Held()) {
      auto it = assigned_.find(id);
      if (it == assigned_.end()) continue;
      wire::HeldAttempt* h = reg->add_running();
      h->set_attempt_id(id);
      h->set_job_id(it->second.first);
      h->set_task_index(it->second.second);
      h->set_started(running);
    }
    for (const wire::AttemptResult& r : pending_.results()) *reg->add_undelivered() = r;
  }

  // Runtime events into pending_; results get their job and task.
  void MoveEventsToPending() {
    runtime_.DrainEvents(&events_);
    for (AttemptId id : events_.started) pending_.add_started()->set_attempt_id(id);
    for (wire::AttemptResult& r : events_.results) {
      if (auto it = assigned_.find(r.attempt_id()); it != assigned_.end()) {
        r.set_job_id(it->second.first);
        r.set_task_index(it->second.second);
        assigned_.erase(it);
      }
      AddResult(&r);
    }
    finished_ += events_.results.size();
  }

  void ReceiveAll() {
    for (;;) {
      zmq::message_t frame;
      if (!socket_.recv(frame, zmq::recv_flags::dontwait)) return;
      if (frame.more()) {  // the protocol is one frame per message
        while (frame.more() && socket_.recv(frame, zmq::recv_flags::dontwait)) {
        }
        TC_LOG(Warn) << "multi-frame message from scheduler; ignored";
        continue;
      }
      Handle(frame);
    }
  }

  void Handle(const zmq::message_t& frame) {
    wire::SchedulerToExecutor in;
    if (!FromFrame(frame, &in)) {
      TC_LOG(Warn) << "malformed frame from scheduler (" << frame.size() << " bytes); ignored";
      return;
    }
    if (in.version() != kProtocolVersion) {
      TC_LOG(Warn) << "scheduler message with protocol version " << in.version() << " (this executor speaks "
                   << kProtocolVersion << "); ignored";
      return;
    }
    last_heard_ = SteadyClock::now();
    switch (in.body_case()) {
      case wire::SchedulerToExecutor::kRegistered: OnRegistered(in.registered()); break;
      case wire::SchedulerToExecutor::kWork: OnWork(in.mutable_work()); break;
      case wire::SchedulerToExecutor::kHeartbeat: break;
      case wire::SchedulerToExecutor::kError: OnError(in.error()); break;
      default: TC_LOG(Warn) << "scheduler message without a body; ignored"; break;
    }
  }

  void OnRegistered(const wire::RegisterAck& ack) {
    bool first = state_ != State::kRegistered;
    state_ = State::kRegistered;
    register_unsent_ = false;
    executor_id_ = ack.executor_id();
    heartbeat_ = Millis(ack.heartbeat_interval_ms() ? ack.heartbeat_interval_ms() : o_.heartbeat_ms);
    lost_after_ = Millis(o_.lost_after_ms         ? o_.lost_after_ms
                         : ack.lost_after_ms()    ? ack.lost_after_ms()
                                                  : 10 * static_cast<uint32_t>(heartbeat_.count()));
    next_heartbeat_ = SteadyClock::now() + heartbeat_;
    next_status_log_ = SteadyClock::now() + std::chrono::seconds(30);
    register_tries_ = 0;
    // The Register carried these results: they are delivered.
    int delivered = std::min(results_in_register_, pending_.results_size());
    if (delivered > 0) pending_.mutable_results()->DeleteSubrange(0, delivered);
    results_in_register_ = 0;
    if (first) {
      TC_LOG(Info) << "registered as executor " << executor_id_ << " (" << o_.slots << " slots, heartbeat "
                   << heartbeat_.count() << " ms, lost after " << lost_after_.count() << " ms)";
    } else {
      TC_LOG(Debug) << "repeated RegisterAck (executor " << executor_id_ << ")";
    }
  }

  void OnWork(wire::Work* work) {
    if (work->assign_size() > 0) {
      std::vector<AttemptSpec> batch;
      batch.reserve(work->assign_size());
      auto c = runtime_.counts();
      uint64_t taken = c.running + c.queued;
      for (wire::Assignment& a : *work->mutable_assign()) {
        if (std::string why = OverCap(taken); !why.empty()) {
          Refuse(a.attempt_id(), wire::AttemptResult::REFUSED, why);
          continue;
        }
        const wire::WorkShare& sh = a.share();
        if (sh.begin() > sh.total() || sh.count() > sh.total() - sh.begin()) {  // never trust a peer's numbers
          Refuse(a.attempt_id(), wire::AttemptResult::FAILED,
                 "work share [" + std::to_string(sh.begin()) + ", +" + std::to_string(sh.count()) +
                     ") is outside its total " + std::to_string(sh.total()));
          continue;
        }
        ++taken;
        assigned_[a.attempt_id()] = {a.job_id(), a.task_index()};
        batch.push_back(AttemptSpec{a.attempt_id(), std::move(*a.mutable_kernel()), std::move(*a.mutable_args()),
                                    a.demand().gpus(), KernelShare{sh.begin(), sh.count(), sh.total()}});
      }
      if (!batch.empty()) runtime_.Submit(std::move(batch));
    }
    for (uint64_t id : work->cancel()) runtime_.Cancel(id);
    if (GetLogLevel() <= LogLevel::kDebug) {
      auto c = runtime_.counts();
      TC_LOG(Debug) << "work: +" << work->assign_size() << " assigned, " << work->cancel_size() << " cancels; "
                    << c.running << " running, " << c.queued << " queued";
    }
  }

  // Why one more attempt (after `taken` running or queued ones) is over the
  // caps, or "" when it is not.
  std::string OverCap(uint64_t taken) const {
    if (o_.max_queued && taken >= uint64_t{o_.slots} + o_.max_queued)
      return "executor queue full: " + std::to_string(taken) + " attempts taken for " + std::to_string(o_.slots) +
             " slots, max_queued=" + std::to_string(o_.max_queued);
    if (held_output_bytes_ >= OutputCap())
      return "executor output memory full: " + std::to_string(held_output_bytes_) + " bytes of outputs not yet sent, " +
             OutputCapName() + "=" + std::to_string(OutputCap());
    return "";
  }

  // Outputs held unsent: max_output_bytes, or else half of
  // max_message_bytes, so that a Report or Register always fits in a frame.
  uint64_t OutputCap() const { return o_.max_output_bytes ? o_.max_output_bytes : o_.max_message_bytes / 2; }
  std::string OutputCapName() const { return o_.max_output_bytes ? "max_output_bytes" : "max_message_bytes/2"; }

  // Reports `id` as not run (REFUSED) or failed, with the reason, in the next Report.
  wire::AttemptResult* Refuse(AttemptId id, wire::AttemptResult::Outcome outcome, const std::string& why) {
    wire::AttemptResult* r = pending_.add_results();
    r->set_attempt_id(id);
    r->set_outcome(outcome);
    r->set_error(why);
    ++refused_;
    TC_LOG(Debug) << "attempt " << id << (outcome == wire::AttemptResult::REFUSED ? " refused: " : " failed: ") << why;
    return r;
  }

  // Admits a finished attempt's result into pending_ under max_output_bytes:
  // an output that does not fit now is refused (run it elsewhere), one that
  // never fits fails.
  void AddResult(wire::AttemptResult* r) {
    // Error texts count too: a kernel's error message is as unbounded as its output.
    const uint64_t size = r->output().size() + r->error().size();
    const uint64_t cap = OutputCap();
    if (size > 0 && held_output_bytes_ + size > cap) {
      std::string why = size > cap ? "output of " + std::to_string(size) + " bytes exceeds the executor's " +
                                         OutputCapName() + "=" + std::to_string(cap)
                                   : "executor output memory full: " + std::to_string(held_output_bytes_) + " + " +
                                         std::to_string(size) + " bytes of outputs not yet sent, " + OutputCapName() +
                                         "=" + std::to_string(cap);
      Refuse(r->attempt_id(), size > cap ? wire::AttemptResult::FAILED : wire::AttemptResult::REFUSED,
             why)
          ->set_run_s(r->run_s());
      return;
    }
    held_output_bytes_ += size;
    pending_.add_results()->Swap(r);
  }

  // A refused key fails silently in ZeroMQ (it redials for ever); say so,
  // at most every 10 s.
  void NoteHandshakeFailure() {
    std::string why = handshake_->TakeFailure();
    if (why.empty() || SteadyClock::now() - last_handshake_log_ < std::chrono::seconds(10)) return;
    last_handshake_log_ = SteadyClock::now();
    TC_LOG(Error) << why << "; still trying";
  }

  void OnError(const wire::Error& e) {
    if (e.code() == wire::Error::UNKNOWN_EXECUTOR) {
      // Answers to Reports sent before our Register: it is on its way.
      if (state_ == State::kRegistering) return;
      Lost("scheduler does not know this executor (restarted?): " + e.message());
      return;
    }
    TC_LOG(Warn) << "scheduler error " << ErrorCodeName(e.code()) << ": " << e.message();
  }

  // Register anew, keeping our attempts: the Register lists them and the
  // scheduler adopts what it still wants (or tells us to cancel the rest).
  void Lost(const std::string& why) {
    state_ = State::kRegistering;
    register_tries_ = 0;
    auto c = runtime_.counts();
    TC_LOG(Warn) << why << "; registering again, keeping " << c.running << " running and " << c.queued
                 << " queued attempts";
    SendRegister();
  }

  void OnTimers() {
    TimePoint now = SteadyClock::now();
    if (state_ == State::kRegistered) {
      if (now - last_heard_ >= lost_after_) {
        Lost("no word from scheduler for " + std::to_string(lost_after_.count()) + " ms");
        return;
      }
      if (now >= next_heartbeat_) {
        FlushEvents(/*heartbeat=*/true);
        next_heartbeat_ = now + heartbeat_;
      }
      if (now >= next_status_log_) LogStatus(now);
    } else if (now >= next_register_) {
      SendRegister();
    }
  }

  // One readable line every kStatusLogInterval while work is flowing.
  void LogStatus(TimePoint now) {
    static constexpr auto kStatusLogInterval = std::chrono::seconds(30);
    next_status_log_ = now + kStatusLogInterval;
    auto c = runtime_.counts();
    if (finished_ == finished_at_last_log_ && c.running == 0 && c.queued == 0) return;
    TC_LOG(Info) << "executor " << executor_id_ << ": " << c.running << "/" << o_.slots << " slots busy, " << c.queued
                 << " queued, " << finished_ << " finished (+" << finished_ - finished_at_last_log_ << ")"
                 << (refused_ ? ", " + std::to_string(refused_) + " refused over the caps" : "");
    finished_at_last_log_ = finished_;
  }

  // Moves runtime events into pending_ and sends them as one Report. Heartbeat
  // Reports also carry progress and signals, and go out even when empty.
  void FlushEvents(bool heartbeat) {
    if (state_ != State::kRegistered) return;  // events wait in the runtime
    MoveEventsToPending();
    if (!heartbeat && pending_.started_size() == 0 && pending_.results_size() == 0) return;
    wire::ExecutorMessage msg;
    msg.set_version(kProtocolVersion);
    wire::Report* report = msg.mutable_report();
    report->Swap(&pending_);
    auto counts = runtime_.counts();
    report->mutable_signals()->set_load(static_cast<double>(counts.running) / runtime_.slots());
    report->mutable_signals()->set_gpu_throttle_reasons(ReadGpuThrottleReasons());  // 0 without NVML
    if (heartbeat)
      for (const wire::AttemptProgress& p : runtime_.Progress()) *report->add_progress() = p;
    if (Send(msg)) {
      held_output_bytes_ = 0;  // handed to ZeroMQ
      return;
    }
    // No connection right now: keep the events (not the stale progress).
    report->clear_progress();
    report->clear_signals();
    pending_.Swap(report);
  }

  void Shutdown() {
    if (state_ == State::kRegistered) {
      wire::ExecutorMessage bye;
      bye.set_version(kProtocolVersion);
      bye.mutable_goodbye()->set_reason("executor shutting down");
      // A short linger lets the Goodbye out without hanging on a dead peer.
      if (Send(bye)) socket_.set(zmq::sockopt::linger, static_cast<int>(o_.goodbye_linger_ms));
    }
    runtime_.Shutdown();
    handshake_.reset();  // its socket too, or closing the context waits for ever
    socket_.close();
    context_.close();
    TC_LOG(Info) << "executor stopped";
  }

  Executor* ex_;
  const ExecutorOptions& o_;
  FaultInjector faults_;
  AttemptRuntime runtime_;
  zmq::context_t context_{1};
  zmq::socket_t socket_;
  std::unique_ptr<HandshakeMonitor> handshake_;
  TimePoint last_handshake_log_{};
  const TimePoint start_;

  State state_ = State::kRegistering;
  uint64_t executor_id_ = 0;
  Millis heartbeat_;
  Millis lost_after_;
  TimePoint last_heard_{};
  TimePoint next_heartbeat_{};
  TimePoint next_register_{};
  TimePoint waiting_since_{};
  TimePoint last_wait_log_{};
  TimePoint next_status_log_{};
  uint64_t finished_ = 0;              // results reported since start
  uint64_t finished_at_last_log_ = 0;
  uint64_t refused_ = 0;               // attempts refused or failed over the caps
  uint64_t held_output_bytes_ = 0;     // output bytes in pending_ (unsent)
  int register_tries_ = 0;
  bool register_unsent_ = false;
  int results_in_register_ = 0;  // pending_ results the last sent Register carried
  // Attempts assigned and not finished: (job, task), for registering again.
  std::unordered_map<AttemptId, std::pair<uint64_t, uint32_t>> assigned_;
  RuntimeEvents events_;   // reused drain buffer
  wire::Report pending_;   // started/results not yet sent
};

// ------------------------------------------------------------ Executor --

Executor::Executor(ExecutorOptions options, KernelRegistry kernels)
    : options_(ResolveDefaults(std::move(options))),
      kernels_(std::move(kernels)),
      wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

Executor::~Executor() {
  if (wake_fd_ >= 0) close(wake_fd_);
}

Status Executor::Run() {
  if (wake_fd_ < 0) return Status::IoError("eventfd failed");
  if (Status s = ValidateEndpoint(options_.scheduler); !s.ok()) return s;
  // Registered always, so an executor without it says how to enable it;
  // an embedding program's own `python` kernel wins.
  if (!kernels_.Knows("python")) {
    if (Status s = RegisterPythonKernel(&kernels_, options_.python, options_.slots); !s.ok()) return s;
  }
  if (options_.python.allow) {
    auto version = ProbePythonVersion(options_.python.interpreter);
    if (!version.ok()) return Status::InvalidArgument("allow_python: " + version.status().message());
    python_version_ = *version;
    if (std::find(options_.allow_kernels.begin(), options_.allow_kernels.end(), "python") == options_.allow_kernels.end())
      options_.allow_kernels.push_back("python");
  }
  if (Status s = kernels_.Restrict(options_.allow_kernels); !s.ok())
    return Status::InvalidArgument("allow_kernels: " + s.message());
  try {
    Loop loop(this, options_);
    return loop.Run();
  } catch (const zmq::error_t& e) {
    return Status::IoError(std::string("zmq: ") + e.what() + " (scheduler endpoint " + options_.scheduler + ")");
  }
}

void Executor::Stop() {
  stop_requested_.store(true);
  Wake();
}

void Executor::Wake() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t r = write(wake_fd_, &one, sizeof one);  // async-signal-safe
}

}  // namespace tailcut::executor
