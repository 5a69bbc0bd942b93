// Executor: the ZeroMQ side. One thread polls the scheduler socket and an
// eventfd; kernels run on the AttemptRuntime's workers and never block it.
// The protocol's executor side is the ExecutorSession's (wire layer), shared
// with an edge scheduler's link to its parent.
#include "tailcut/executor/executor.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>
#include <unordered_map>

#include <zmq.hpp>

#include "gpu_detect.h"
#include "gpu_signals.h"
#include "tailcut/common/id_map.h"
#include "tailcut/common/kernel_args.h"
#include "tailcut/common/log.h"
#include "tailcut/common/process.h"
#include "tailcut/executor/output_dir.h"
#include "tailcut/executor/runtime.h"
#include "tailcut/wire/executor_session.h"
#include "tailcut/wire/wire.h"

namespace tailcut::executor {
namespace {

using SteadyClock = std::chrono::steady_clock;
using TimePoint = SteadyClock::time_point;
using Millis = std::chrono::milliseconds;

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

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

constexpr int64_t kMinMessageBytes = 64 * 1024;

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
      .Get("python_max_rss_mb", &o.python.max_rss_mb)
      .Get("exec_cpu_s", &o.exec.cpu_s)
      .Get("scratch_dir", &o.exec.scratch_dir)
      .Get("fake_gpus", &o.fake_gpus);
  int64_t memory_mb = 0;
  t.Get("memory_mb", &memory_mb);
  int64_t exec_memory_mb = 0;
  t.Get("exec_memory_mb", &exec_memory_mb);
  std::string exec_allow;
  t.Get("exec_allow", &exec_allow);
  o.exec.allow = SplitKernelList(exec_allow);  // the same comma-separated form
  for (const std::string& a : o.exec.allow)
    t.Check(!a.empty() && a[0] == '/' && std::filesystem::path(a).lexically_normal().string() == a,
            "exec_allow: '" + a + "' must be an absolute, normalized path (a folder ends in '/')");
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
  if (t.Has("kernel_plugins") && c.ArraySize("kernel_plugins") == 0)  // a table or a scalar
    t.Also(Status::InvalidArgument("kernel_plugins must be an array of paths, e.g. [\"/opt/k/libmine.so\"]"));
  for (size_t i = 0, n = c.ArraySize("kernel_plugins"); i < n; ++i)
    t.Get("kernel_plugins." + std::to_string(i), &o.kernel_plugins.emplace_back());
  // The daemon runs the built-ins: an unknown name is a config error now, not a failed Run later. With
  // kernel plugins the names are known once they are loaded (LoadKernelPlugins).
  // `python` is enabled by allow_python, not by the list; naming it there is the same.
  if (std::erase(o.allow_kernels, "python") > 0) o.python.allow = true;
  if (Status s = BuiltinKernels().Restrict(o.allow_kernels); !s.ok() && o.kernel_plugins.empty())
    t.Also(Status::InvalidArgument("allow_kernels: " + s.message()));
  if (o.python.allow) o.allow_kernels.push_back("python");
  t.Also(ValidateEndpoints(o.scheduler))
      .Also(CheckShellTrust(o))
      .Check(o.key_file.empty() == o.scheduler_key.empty(),
             "key_file and scheduler_key go together: this executor's key and the scheduler's public key")
      .Check(o.heartbeat_ms > 0, "heartbeat_ms must be > 0")
      .Check(max_output_bytes >= 0, "max_output_bytes must be >= 0 (0 = no cap)")
      .Check(max_message_bytes >= kMinMessageBytes && max_message_bytes <= INT32_MAX,
             "max_message_bytes must be in " + std::to_string(kMinMessageBytes) + ".." + std::to_string(INT32_MAX))
      .Check(max_output_bytes <= max_message_bytes / 2, "max_output_bytes must be at most half of max_message_bytes (" +
                                                            std::to_string(max_message_bytes) +
                                                            "): a Report carries them")
      .Check(!o.python.interpreter.empty(), "python must name an interpreter (default /usr/bin/python3)")
      .Check(o.exec.cpu_s >= 0 && exec_memory_mb >= 0, "exec_cpu_s and exec_memory_mb must be >= 0 (0 = none)")
      .Check(memory_mb >= 0 && static_cast<uint64_t>(memory_mb) <= kMaxMemoryMb,
             "memory_mb must be in [0, 2^40] MiB (0 = the machine's memory)")
      .Check(o.fake_gpus <= 64, "fake_gpus must be at most 64")
      .Check(o.faults.slowdown > 0 && o.faults.fail_slow_factor > 0,
             "faults.slowdown and faults.fail_slow_factor must be > 0")
      .Check(o.faults.delay_prob >= 0 && o.faults.delay_prob <= 1, "faults.delay_prob must be in [0, 1]")
      .Check(o.faults.delay_ms >= 0 && o.faults.fail_slow_after_s >= 0 && o.faults.crash_after_s >= 0,
             "faults.delay_ms, fail_slow_after_s and crash_after_s must be >= 0");
  if (!t.status().ok()) return t.status();
  o.max_output_bytes = static_cast<uint64_t>(max_output_bytes);
  o.max_message_bytes = static_cast<uint64_t>(max_message_bytes);
  o.faults.seed = static_cast<uint64_t>(seed);
  o.exec.memory_mb = static_cast<uint64_t>(exec_memory_mb);
  o.memory_mb = static_cast<uint64_t>(memory_mb);
  return o;
}

StatusOr<KernelRegistry> LoadKernelPlugins(const ExecutorOptions& options, KernelRegistry kernels) {
  std::vector<std::string> loaded;
  for (const std::string& path : options.kernel_plugins) {
    auto names = LoadKernelPlugin(path, &kernels);
    if (!names.ok()) return names.status();
    loaded.insert(loaded.end(), names->begin(), names->end());
    TC_LOG(Info) << "kernel plugin '" << path << "': kernels " << JoinNames(*names);
  }
  std::vector<std::string> allowed = options.allow_kernels;
  if (!kernels.Knows("python")) std::erase(allowed, "python");  // Executor::Run registers it (python.allow)
  if (Status s = kernels.Restrict(allowed); !s.ok()) return Status::InvalidArgument("allow_kernels: " + s.message());
  std::vector<std::string> idle;  // loaded but not allowed: opt-in, like every kernel
  for (const std::string& name : loaded)
    if (!kernels.Find(name)) idle.push_back(name);
  if (!idle.empty())
    TC_LOG(Warn) << "kernel plugin kernels not in allow_kernels, so not run here: " << JoinNames(idle);
  return kernels;
}

uint64_t MachineMemoryMb() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  uint64_t mb = pages > 0 && page > 0 ? (static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)) >> 20 : 0;
  // In a container the cgroup (v2) limit is what the attempts may use.
  if (std::ifstream max("/sys/fs/cgroup/memory.max"); max) {
    uint64_t bytes = 0;
    if (max >> bytes && bytes > 0 && (mb == 0 || (bytes >> 20) < mb)) mb = bytes >> 20;  // "max": no limit
  }
  return mb;
}

namespace {

// Register.gpus, and the devices the runtime hands out (docs/GPU.md).
std::vector<wire::GpuInfo> AdvertisedGpus(const ExecutorOptions& o) {
  if (o.fake_gpus == 0) return DetectGpus();
  std::vector<wire::GpuInfo> gpus(o.fake_gpus);
  for (uint32_t i = 0; i < o.fake_gpus; ++i) {
    gpus[i].set_index(i);
    gpus[i].set_name("fake GPU " + std::to_string(i) + " (fake_gpus, a test aid)");
    gpus[i].set_fake(true);
  }
  return gpus;
}

}  // namespace

ExecutorOptions ResolveDefaults(ExecutorOptions o) {
  const uint32_t cores = std::max(1u, std::thread::hardware_concurrency());
  if (o.slots == 0) o.slots = cores;
  if (o.threads == 0) o.threads = cores;
  o.threads = std::min(o.threads, o.slots);  // a thread without a slot idles
  if (o.name.empty()) o.name = HostName() + ":" + std::to_string(getpid());
  if (o.register_retry_ms == 0) o.register_retry_ms = 1000;
  if (o.heartbeat_ms == 0) o.heartbeat_ms = 1000;
  if (o.memory_mb == 0) o.memory_mb = MachineMemoryMb();
  // A Report carries the result: what one may hold, less room for its envelope.
  const uint64_t output_cap = o.max_output_bytes ? o.max_output_bytes : o.max_message_bytes / 2;
  o.python.max_result_bytes = output_cap > 65536 ? output_cap - 65536 : output_cap;
  return o;
}

// ---------------------------------------------------------------- loop --

// The daemon's loop: kernels on the runtime, the protocol in the session
// (tailcut/wire/executor_session.h).
class Executor::Loop {
 public:
  Loop(Executor* ex, const ExecutorOptions& o)
      : ex_(ex),
        o_(o),
        faults_(o.faults),
        gpus_(AdvertisedGpus(o)),
        runtime_(RuntimeOptions{o.slots, o.threads, static_cast<uint32_t>(gpus_.size())}, &ex->kernels_, &faults_,
                 [ex] { ex->Wake(); }),
        start_(SteadyClock::now()),
        session_(std::make_unique<ExecutorSession>(SessionFor(o), context_, MakeHooks())) {}

  Status Run() {
    if (Status s = session_->Connect(); !s.ok()) return s;
    TC_LOG(Info) << "executor " << o_.name << ": " << o_.slots << " slots on " << o_.threads << " threads, "
                 << o_.memory_mb << " MiB of memory, " << gpus_.size() << (o_.fake_gpus ? " fake" : "")
                 << " GPU(s), kernels: " << (ex_->kernels_.Names().empty() ? "none" : ex_->kernels_.NamesList());
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
    session_->Tick(ElapsedS());  // the first Register
    while (!ex_->stop_requested_.load()) {
      if (faults_.CrashDue(ElapsedS())) {
        TC_LOG(Warn) << "fault injection: crashing now (crash_after_s=" << o_.faults.crash_after_s << ")";
        _exit(137);  // no Goodbye, no cleanup: a dead executor
      }
      const bool want_out = session_->want_out();
      zmq::pollitem_t items[] = {
          {session_->socket().handle(), 0, static_cast<short>(ZMQ_POLLIN | (want_out ? ZMQ_POLLOUT : 0)), 0},
          {nullptr, ex_->wake_fd_, ZMQ_POLLIN, 0},
      };
      zmq::poll(items, 2, Millis(PollTimeout()));
      if (items[1].revents & ZMQ_POLLIN) {
        uint64_t n;
        [[maybe_unused]] ssize_t r = read(ex_->wake_fd_, &n, sizeof n);
      }
      if (items[0].revents & ZMQ_POLLIN) session_->OnReadable(ElapsedS());
      if (items[0].revents & ZMQ_POLLOUT) session_->OnWritable(ElapsedS());
      // Events wait in the runtime until registered (a Register takes them).
      if (session_->registered()) MoveEventsToOutbox();
      session_->Flush();
      session_->Tick(ElapsedS());
      if (session_->registered() && SteadyClock::now() >= next_status_log_) LogStatus(SteadyClock::now());
    }
    Shutdown();
    return Status::Ok();
  }

 private:
  static SessionOptions SessionFor(const ExecutorOptions& o) {
    SessionOptions s;
    s.endpoint = o.scheduler;
    s.name = o.name;
    s.heartbeat_ms = o.heartbeat_ms;
    s.lost_after_ms = o.lost_after_ms;
    s.register_retry_s = s.max_backoff_s = o.register_retry_ms / 1000.0;  // a fixed retry
    s.max_message_bytes = o.max_message_bytes;
    s.max_output_bytes = o.max_output_bytes;
    s.keys = {o.key_file, o.scheduler_key};
    return s;
  }

  ExecutorSession::Hooks MakeHooks() {
    ExecutorSession::Hooks h;
    h.offer = [this](wire::Register* reg) {
      reg->set_cpu_slots(o_.slots);
      reg->set_max_queued(o_.max_queued);  // the scheduler queues no more than that here
      for (const wire::GpuInfo& g : gpus_) *reg->add_gpus() = g;
      reg->set_memory_mb(o_.memory_mb);
      for (const auto& [k, v] : o_.labels) (*reg->mutable_labels())[k] = v;
      for (const std::string& k : ex_->kernels_.Names()) {
        reg->add_kernels(k);
        const KernelTraits& traits = ex_->kernels_.Find(k)->traits;
        if (traits.idempotent) reg->add_idempotent_kernels(k);
        if (traits.args) {
          wire::KernelSignature* sig = reg->add_kernel_args();
          sig->set_kernel(k);
          for (const KernelArgSpec& a : *traits.args) {
            wire::KernelArgSpec* w = sig->add_args();
            w->set_name(a.name);
            w->set_integer(a.type == KernelArgSpec::Type::kInteger);
            if (a.min > -std::numeric_limits<double>::max()) w->set_min(a.min);
            if (a.max < std::numeric_limits<double>::max()) w->set_max(a.max);
          }
        }
      }
      if (ex_->kernels_.Find("python")) reg->set_python_version(ex_->python_version_);
      // The attempts we still hold, and (in the outbox) the results the
      // scheduler has not seen, go with the Register (docs/PROTOCOL.md).
      MoveEventsToOutbox();
      for (auto& [id, running] : runtime_.Held()) {
        const std::pair<uint64_t, uint32_t>* job_task = assigned_.Find(id);
        if (!job_task) continue;
        wire::HeldAttempt* x = reg->add_running();
        x->set_attempt_id(id);
        x->set_job_id(job_task->first);
        x->set_task_index(job_task->second);
        x->set_started(running);
      }
      return true;
    };
    h.work = [this](wire::Work* w) { OnWork(w); };
    h.report = [this](wire::Report* r, bool heartbeat) {
      r->mutable_signals()->set_load(static_cast<double>(runtime_.counts().running) / runtime_.slots());
      r->mutable_signals()->set_gpu_throttle_reasons(ReadGpuThrottleReasons());  // 0 without NVML
      if (heartbeat)
        for (const wire::AttemptProgress& p : runtime_.Progress()) *r->add_progress() = p;
    };
    h.registered = [this](const wire::RegisterAck& ack, bool first) {
      next_status_log_ = SteadyClock::now() + std::chrono::seconds(30);
      if (first)
        TC_LOG(Info) << "registered as executor " << ack.executor_id() << " (" << o_.slots << " slots, heartbeat "
                     << (ack.heartbeat_interval_ms() ? ack.heartbeat_interval_ms() : o_.heartbeat_ms) << " ms)";
      else
        TC_LOG(Debug) << "repeated RegisterAck (executor " << ack.executor_id() << ")";
    };
    h.holding = [this] {
      auto c = runtime_.counts();
      return std::to_string(c.running) + " running and " + std::to_string(c.queued) + " queued attempts";
    };
    return h;
  }

  double ElapsedS() const { return std::chrono::duration<double>(SteadyClock::now() - start_).count(); }

  long PollTimeout() const {
    double next = std::min(ElapsedS() + 1.0, session_->NextTimer());
    if (o_.faults.crash_after_s > 0) next = std::min(next, o_.faults.crash_after_s);
    return std::max<long>(0, static_cast<long>(std::ceil((next - ElapsedS()) * 1000)) + 1);
  }

  // Runtime events into the outbox; results get their job and task.
  void MoveEventsToOutbox() {
    runtime_.DrainEvents(&events_);
    for (AttemptId id : events_.started) session_->AddStarted(id);
    for (wire::AttemptResult& r : events_.results) {
      // Only a successful attempt's output directory may be promoted; it
      // waits for the scheduler's Promote, or a cancel when another won.
      if (auto d = output_dirs_.find(r.attempt_id()); d != output_dirs_.end()) {
        if (r.outcome() == wire::AttemptResult::OK) {
          d->second.finished = true;
        } else {
          RemoveAttemptOutputDir(d->second.path);
          output_dirs_.erase(d);
        }
      }
      if (const std::pair<uint64_t, uint32_t>* job_task = assigned_.Find(r.attempt_id())) {
        r.set_job_id(job_task->first);
        r.set_task_index(job_task->second);
        assigned_.Erase(r.attempt_id());
      }
      session_->AddResult(&r);
    }
    finished_ += events_.results.size();
  }

  void OnWork(wire::Work* work) {
    if (work->assign_size() > 0) {
      std::vector<AttemptSpec> batch;
      batch.reserve(work->assign_size());
      auto c = runtime_.counts();
      uint64_t taken = c.running + c.queued;
      for (wire::Assignment& a : *work->mutable_assign()) {
        if (std::string why = OverCap(taken); !why.empty()) {
          session_->Refuse(a.attempt_id(), wire::AttemptResult::REFUSED, why);
          continue;
        }
        const wire::WorkShare& sh = a.share();
        if (sh.begin() > sh.total() || sh.count() > sh.total() - sh.begin()) {  // never trust a peer's numbers
          session_->Refuse(a.attempt_id(), wire::AttemptResult::FAILED,
                           "work share [" + std::to_string(sh.begin()) + ", +" + std::to_string(sh.count()) +
                               ") is outside its total " + std::to_string(sh.total()));
          continue;
        }
        ++taken;
        assigned_[a.attempt_id()] = {a.job_id(), a.task_index()};
        // Templated args are expanded here, so a 1M-task fan-out stays one
        // template on the way in (docs/JOBS.md, "Per-task arguments").
        std::string args = a.args_template() ? ExpandTaskArgs(a.args(), a.task_index(), a.task_count())
                                             : std::move(*a.mutable_args());
        AttemptSpec spec{a.attempt_id(), std::move(*a.mutable_kernel()), std::move(args), a.demand().gpus(),
                         KernelShare{sh.begin(), sh.count(), sh.total()},
                         KernelIdentity{a.job_id(), a.task_index(), a.task_count(), a.attempt_id(), a.copy()}};
        for (wire::TaskInput& in : *a.mutable_inputs())
          spec.inputs.push_back({in.job_id(), in.task_index(), std::move(*in.mutable_output()), in.path()});
        spec.memory_mb = a.demand().memory_mb();
        if (!a.output_dir().empty()) {
          auto dir = MakeAttemptOutputDir(a.output_dir(), a.job_id(), a.task_index(), a.attempt_id());
          if (!dir.ok()) {
            assigned_.Erase(a.attempt_id());
            --taken;
            session_->Refuse(a.attempt_id(), wire::AttemptResult::FAILED, dir.status().message());
            continue;
          }
          spec.output_dir = *dir;
          output_dirs_[a.attempt_id()] = {*dir, false};
        }
        batch.push_back(std::move(spec));
      }
      if (!batch.empty()) runtime_.Submit(std::move(batch));
    }
    for (uint64_t id : work->cancel()) {
      // A finished attempt's output directory is dropped: another attempt won.
      if (auto d = output_dirs_.find(id); d != output_dirs_.end() && d->second.finished) {
        RemoveAttemptOutputDir(d->second.path);
        output_dirs_.erase(d);
      }
      runtime_.Cancel(id);
    }
    for (const wire::Promote& p : work->promote()) OnPromote(p);
    if (GetLogLevel() <= LogLevel::kDebug) {
      auto c = runtime_.counts();
      TC_LOG(Debug) << "work: +" << work->assign_size() << " assigned, " << work->cancel_size() << " cancels; "
                    << c.running << " running, " << c.queued << " queued";
    }
  }

  // Renames the committed attempt's directory into place (idempotent) and answers.
  void OnPromote(const wire::Promote& p) {
    wire::Promoted* done = session_->AddPromoted();
    done->set_job_id(p.job_id());
    done->set_task_index(p.task_index());
    done->set_attempt_id(p.attempt_id());
    // Only below a directory that names itself absolutely: a peer's path is checked, never trusted.
    if (p.output_dir().empty() || p.output_dir().front() != '/' || p.output_dir().find("/..") != std::string::npos) {
      done->set_error("output_dir '" + p.output_dir() + "' is not an absolute path in normal form");
      return;
    }
    output_dirs_.erase(p.attempt_id());
    Status s = PromoteAttemptOutput(p.output_dir(), p.job_id(), p.task_index(), p.attempt_id());
    if (!s.ok()) done->set_error(s.message());
    TC_LOG(Debug) << "promote job " << p.job_id() << " task " << p.task_index() << " attempt " << p.attempt_id()
                  << ": " << (s.ok() ? "ok" : s.message());
  }

  // Why one more attempt (after `taken` running or queued ones) is over the
  // caps, or "" when it is not.
  std::string OverCap(uint64_t taken) const {
    if (o_.max_queued && taken >= uint64_t{o_.slots} + o_.max_queued)
      return "executor queue full: " + std::to_string(taken) + " attempts taken for " + std::to_string(o_.slots) +
             " slots, max_queued=" + std::to_string(o_.max_queued);
    if (session_->held_output_bytes() >= session_->output_cap())
      return "executor output memory full: " + std::to_string(session_->held_output_bytes()) +
             " bytes of outputs not yet sent, " + session_->output_cap_name() + "=" +
             std::to_string(session_->output_cap());
    return "";
  }

  // One readable line every kStatusLogInterval while work is flowing.
  void LogStatus(TimePoint now) {
    static constexpr auto kStatusLogInterval = std::chrono::seconds(30);
    next_status_log_ = now + kStatusLogInterval;
    auto c = runtime_.counts();
    if (finished_ == finished_at_last_log_ && c.running == 0 && c.queued == 0) return;
    TC_LOG(Info) << "executor " << session_->executor_id() << ": " << c.running << "/" << o_.slots << " slots busy, "
                 << c.queued << " queued, " << finished_ << " finished (+" << finished_ - finished_at_last_log_ << ")"
                 << (session_->refused() ? ", " + std::to_string(session_->refused()) + " refused over the caps" : "");
    finished_at_last_log_ = finished_;
  }

  void Shutdown() {
    session_->Goodbye("executor shutting down", static_cast<int>(o_.goodbye_linger_ms));
    runtime_.Shutdown();
    session_.reset();  // its socket first, or closing the context waits for ever
    context_.close();
    TC_LOG(Info) << "executor stopped";
  }

  Executor* ex_;
  const ExecutorOptions& o_;
  FaultInjector faults_;
  const std::vector<wire::GpuInfo> gpus_;  // before runtime_, which hands them out
  AttemptRuntime runtime_;
  zmq::context_t context_{1};
  const TimePoint start_;
  std::unique_ptr<ExecutorSession> session_;
  TimePoint next_status_log_{};
  uint64_t finished_ = 0;  // results reported since start
  uint64_t finished_at_last_log_ = 0;
  // Attempts assigned and not finished: (job, task), for registering again.
  IdMap<std::pair<uint64_t, uint32_t>> assigned_;  // flat: no node per attempt (issue 41)
  // Attempts with an output directory (Assignment.output_dir): until they
  // fail, are cancelled after finishing, or are promoted.
  struct OutputDir {
    std::string path;
    bool finished = false;  // OK: kept for a Promote
  };
  std::unordered_map<AttemptId, OutputDir> output_dirs_;
  RuntimeEvents events_;  // reused drain buffer
};

// ------------------------------------------------------------ Executor --

Executor::Executor(ExecutorOptions options) : Executor(options, BuiltinKernels(options.exec)) {}

Executor::Executor(ExecutorOptions options, KernelRegistry kernels)
    : options_(ResolveDefaults(std::move(options))),
      kernels_(std::move(kernels)),
      wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

Executor::~Executor() {
  if (wake_fd_ >= 0) close(wake_fd_);
}

Status Executor::Run() {
  if (wake_fd_ < 0) return Status::IoError("eventfd failed");
  if (Status s = ValidateEndpoints(options_.scheduler); !s.ok()) return s;
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
