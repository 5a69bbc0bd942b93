// `tailcut bench`: the [live] section of a scenario on real daemons.
#include "live.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "tailcut/client/client.h"
#include "tailcut/client/local_cluster.h"
#include "tailcut/client/progress.h"
#include "tailcut/common/clock.h"
#include "tailcut/common/kernel_args.h"
#include "tailcut/common/log.h"
#include "tailcut/common/thread_annotations.h"
#include "tailcut/policies/registry.h"
#include "tailcut/policies/scheduling_config.h"
#include "tailcut/server/server.h"
#include "tailcut/server/trace_recorder.h"
#include "tailcut/sim/clairvoyant.h"
#include "tailcut/sim/random.h"
#include "tailcut/sim/replay.h"

namespace tailcut::sim {

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string Fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Machine time per attempt from the core's records. Committed attempts:
// the executor-measured run_s. Superseded / cancelled ones: the core's
// record, i.e. from the scheduler receiving AttemptStarted to the cancel
// decision (the cancel's loopback trip and the executor's wake-up, well
// under a millisecond, are not counted); attempts cancelled while still
// queued on the executor count 0. Attempts on a crashed executor count
// until the core declares it lost (live.lost_after_s after the crash).
class AttemptTally final : public CoreObserver {
 public:
  void OnAttemptEnded(const AttemptRecord& r) override {
    MutexLock lock(mu_);
    attempts_++;
    if (r.copy) copies_++;
    double d = r.Duration();
    machine_ += d;
    if (r.outcome == AttemptOutcome::kCommitted) committed_ += d, commits_++;
  }
  // Tasks committed and copies so far (the progress line).
  std::pair<uint64_t, uint64_t> Progress() {
    MutexLock lock(mu_);
    return {commits_, copies_};
  }
  void Fill(SimResult* out) {
    MutexLock lock(mu_);
    out->attempts = attempts_;
    out->copies = copies_;
    out->machine_s = machine_;
    out->committed_s = committed_;
    out->extra_work = committed_ > 0 ? (machine_ - committed_) / committed_ : 0;
  }

 private:
  Mutex mu_;  // the server's loop reports, the workload thread reads
  uint64_t attempts_ TC_GUARDED_BY(mu_) = 0, copies_ TC_GUARDED_BY(mu_) = 0, commits_ TC_GUARDED_BY(mu_) = 0;
  double machine_ TC_GUARDED_BY(mu_) = 0, committed_ TC_GUARDED_BY(mu_) = 0;
};

// Flags of executor `i` (`replacement`: the one started after its crash).
// `offset_s`: seconds from an executor's start to the workload's start,
// added to the [live] fault times (which count from the workload start).
// What the benchmark's exec tasks run (executors allow exactly these).
constexpr const char* kExecPrograms = "/bin/sleep,/bin/true";

std::vector<std::string> ExecutorFlags(const LiveModel& live, uint32_t i, bool replacement, double offset_s,
                                       uint64_t seed) {
  std::vector<std::string> a = {"--slots", std::to_string(live.slots), "--name",
                                "live-" + std::to_string(i + 1) + (replacement ? "r" : ""), "--log-level", "warn"};
  // Slow from the workload's start means slow from the executor's own start
  // (no kernel runs before the workload): an executor that took longer than
  // the warm-up to start (a loaded machine, ASan) would otherwise still be
  // healthy while the workload runs.
  if (static_cast<int64_t>(i) == live.fail_slow_executor)
    a.insert(a.end(), {"--fail-slow-after",
                       Fmt(live.fail_slow_at_s > 0 ? live.fail_slow_at_s + (replacement ? 0 : offset_s) : 0),
                       "--fail-slow-factor", Fmt(live.fail_slow_factor)});
  if (live.delay_prob > 0 && live.delay_ms > 0)
    a.insert(a.end(), {"--delay-prob", Fmt(live.delay_prob), "--delay-ms", Fmt(live.delay_ms), "--fault-seed",
                       std::to_string(seed * 1000 + i + (replacement ? 500 : 0))});
  if (live.kernel == "exec") a.insert(a.end(), {"--allow-exec", "--exec-allow", std::string(kExecPrograms)});
  if (static_cast<int64_t>(i) == live.crash_executor && !replacement)
    a.insert(a.end(), {"--crash-after", Fmt(std::max(0.001, live.crash_at_s + offset_s))});
  return a;
}

std::string TaskArgs(const LiveModel& l) {
  if (l.kernel == "noop") return "";
  if (l.kernel == "exec") {
    ExecArgs e;
    e.argv = {"/bin/sleep", Fmt(l.task_ms / 1000.0)};
    return FormatExecArgs(e).value();  // no line breaks in these
  }
  std::string a = "ms=" + Fmt(l.task_ms);
  if (l.kernel == "sleep" && l.sigma > 0) a += " sigma=" + Fmt(l.sigma);  // no seed: every attempt draws afresh
  return a;
}

}  // namespace

StatusOr<SimResult> RunLivePolicy(const Scenario& sc, const std::string& entry, const LiveOptions& o) {
  const LiveModel& l = sc.live;
  auto wall0 = Clock::now();
  auto chain = MakePolicyEntry(entry, sc.config, LivePolicyServices(sc.config));
  if (!chain.ok()) return chain.status();
  LocalClusterOptions lco;
  lco.name = "bench";
  lco.executor_binary = o.executor_path;
  lco.server.core = sc.core;
  lco.server.predictor = sc.predictor;
  lco.server.core.lost_after_s = l.lost_after_s;  // the simulator's default (0) means "never" live
  AttemptTally tally;
  lco.observers = {&tally};
  std::unique_ptr<TraceRecorder> trace;
  if (!o.trace_path.empty()) {
    TraceRecorderOptions to;
    to.path = o.trace_path;
    to.max_bytes = 1ull << 40;  // one run: no rotation
    (void)std::remove(o.trace_path.c_str());  // a fresh trace per run, not appended to the last one
    auto opened = TraceRecorder::Open(std::move(to));
    if (!opened.ok()) return opened.status();
    trace = std::move(opened).value();
    lco.observers.push_back(trace.get());
  }
  auto started = LocalCluster::Start(lco, std::move(chain).value());
  if (!started.ok()) return started.status();
  std::unique_ptr<LocalCluster> cluster = std::move(started).value();

  // Fault times in [live] count from the workload's start; executors count
  // from their own start. Start the workload a fixed warm-up after spawning
  // (or when all registered, if later) and shift the fault flags by it.
  const double kWarmup = 0.6;
  auto spawned = Clock::now();
  for (uint32_t i = 0; i < l.executors; ++i) {
    LocalExecutorSpec e;
    e.flags = ExecutorFlags(l, i, false, kWarmup, o.seed);
    e.expect_exit = static_cast<int64_t>(i) == l.crash_executor;
    e.restart = e.expect_exit && l.crash_restart;
    e.restart_flags = ExecutorFlags(l, i, true, kWarmup, o.seed);
    if (auto added = cluster->AddExecutor(std::move(e)); !added.ok()) return added.status();
  }
  if (Status s = cluster->WaitForExecutors(l.executors, 15); !s.ok()) return s;
  if (trace) {  // which scheduler id is which live executor (the fail-slow one, ...)
    Client c(cluster->client_options());
    auto list = c.Executors();
    if (!list.ok()) return list.status();
    for (const wire::ExecutorInfo& x : *list) {
      std::string note = "executor " + std::to_string(x.executor_id()) + " = " + x.name();
      for (uint32_t i = 0; i < l.executors; ++i)
        if (x.name() == "live-" + std::to_string(i + 1) && static_cast<int64_t>(i) == l.fail_slow_executor)
          note += " (fail-slow x" + Fmt(l.fail_slow_factor) + " from " + Fmt(l.fail_slow_at_s) + " s)";
      trace->Comment(note);
    }
  }
  double left = kWarmup - Since(spawned);
  if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));

  const uint32_t jobs = o.jobs ? o.jobs : l.jobs;
  wire::JobSpec spec = FanoutJob(l.kernel, TaskArgs(l), l.tasks_per_job);
  spec.set_stream_results(false);
  if (l.idempotent >= 0) spec.set_idempotent(l.idempotent == 1);
  // One client per job, connected before the workload starts, so that the
  // measured latency holds no connection set-up.
  std::vector<std::unique_ptr<Client>> clients;
  for (uint32_t j = 0; j < jobs; ++j) clients.push_back(std::make_unique<Client>(cluster->client_options()));
  for (auto& c : clients) (void)c->Executors();

  SimResult r;
  r.policy = entry;
  r.latencies.assign(jobs, std::numeric_limits<double>::quiet_NaN());
  std::vector<int> state(jobs, 0);  // 0 unfinished, 1 succeeded, 2 failed/cancelled
  std::atomic<uint32_t> done{0}, submitted{0};
  auto run_job = [&](uint32_t j) {
    auto t0 = Clock::now();
    wire::JobSpec s = spec;
    s.set_name("live-" + std::to_string(j + 1));
    auto id = clients[j]->Submit(s);
    if (id.ok()) {
      WaitOptions w;
      w.progress_interval_s = 1.0;
      w.timeout_s = o.job_timeout_s;
      auto st = clients[j]->Wait(*id, w);
      if (st.ok() && IsTerminal(st->state())) {
        r.latencies[j] = Since(t0);
        state[j] = st->state() == wire::JOB_SUCCEEDED ? 1 : 2;
      }
    }
    done++;
  };

  auto work0 = Clock::now();
  std::vector<std::thread> threads;
  std::thread submitter;
  if (l.arrival == "closed") {
    uint32_t n = std::min(l.outstanding, jobs);
    for (uint32_t k = 0; k < n; ++k)
      threads.emplace_back([&] {
        for (uint32_t j; (j = submitted++) < jobs;) run_job(j);
      });
  } else {
    submitter = std::thread([&] {
      const std::vector<double> arrivals = LiveArrivals(l, o.seed, jobs);
      for (uint32_t j = 0; j < jobs; ++j) {
        auto when = work0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(arrivals[j]));
        std::this_thread::sleep_until(when);
        submitted++;
        threads.emplace_back(run_job, j);
      }
    });
  }
  // Progress on stderr while it runs: tasks committed of the whole run.
  ProgressPrinter progress;
  std::string label = "bench: " + (sc.name.empty() ? std::string("scenario") : sc.name) + " / " + entry;
  const uint64_t total_tasks = static_cast<uint64_t>(jobs) * l.tasks_per_job;
  auto report = [&] {
    if (!o.progress) return;
    auto [committed, copies] = tally.Progress();
    progress.Update(label, {std::min(committed, total_tasks), total_tasks, copies, Since(work0)});
  };
  while (done.load() < jobs) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    report();
  }
  if (submitter.joinable()) submitter.join();
  for (auto& t : threads) t.join();
  r.virtual_s = Since(work0);
  progress.End();
  clients.clear();
  for (uint32_t j = 0; j < jobs; ++j) {
    if (state[j] == 0) r.unfinished++;
    else r.jobs++;
    if (state[j] == 2) r.failed++;
  }
  // Keep the logs when something went wrong (they are printed on exit).
  if (r.unfinished > 0 || cluster->executor_exits() > (l.crash_executor >= 0 ? 1 : 0)) cluster->KeepLogs();
  cluster.reset();  // stops the scheduler: after this the tally is complete (no callbacks left)
  r.tasks = static_cast<uint64_t>(jobs) * l.tasks_per_job;
  tally.Fill(&r);
  if (trace) {
    trace->Flush();
    if (Status s = trace->status(); !s.ok()) return s;
  }
  Summarise(&r);
  r.wall_s = Since(wall0);
  return r;
}

// The [live] section as the simulator models it, for the references.
static Scenario LiveReferenceModel(const Scenario& sc, const LiveOptions& o) {
  Scenario m = LiveAsSimScenario(sc);
  m.workload.jobs = o.jobs ? o.jobs : sc.live.jobs;
  if (sc.live.crash_restart) m.cluster.crashes.clear();  // a fresh executor takes the crashed one's place at once
  return m;
}

namespace {

// Executor-measured run times of committed attempts (the kernel's own time:
// for exec, fork + exec + wait of the program).
class RunTimes final : public CoreObserver {
 public:
  void OnAttemptEnded(const AttemptRecord& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (r.outcome == AttemptOutcome::kCommitted) run_s_.push_back(r.run_s);
  }
  std::vector<double> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(run_s_);
  }

 private:
  std::mutex mu_;
  std::vector<double> run_s_;
};

// What one task of `kernel` costs on one executor with one slot: the
// executor-measured run time (p50, mean) and the job's wall time per task
// (dispatch and reports included), over `tasks` tasks.
struct KernelCost {
  double run_p50_ms = 0, run_mean_ms = 0, wall_per_task_ms = 0;
};

StatusOr<KernelCost> MeasureKernelCost(const LiveOptions& o, const std::string& kernel, const std::string& args,
                                       uint32_t tasks) {
  LocalClusterOptions lco;
  lco.name = "bench-exec";
  lco.executor_binary = o.executor_path;
  RunTimes times;
  lco.observers = {&times};
  auto started = LocalCluster::Start(lco);  // no policies: one attempt per task
  if (!started.ok()) return started.status();
  std::unique_ptr<LocalCluster> cluster = std::move(started).value();
  LocalExecutorSpec e;
  e.flags = {"--slots", "1", "--name", "cost", "--log-level", "warn", "--allow-exec", "--exec-allow", kExecPrograms};
  if (auto added = cluster->AddExecutor(std::move(e)); !added.ok()) return added.status();
  if (Status s = cluster->WaitForExecutors(1, 15); !s.ok()) return s;
  Client client(cluster->client_options());
  auto t0 = Clock::now();
  auto id = client.Submit(FanoutJob(kernel, args, tasks));
  if (!id.ok()) return id.status();
  auto st = client.Wait(*id);
  if (!st.ok()) return st.status();
  if (st->state() != wire::JOB_SUCCEEDED) return Status::Internal(kernel + " cost job failed: " + st->reason());
  double wall = Since(t0);
  cluster.reset();  // the observer has every record now
  std::vector<double> run = times.Take();
  if (run.empty()) return Status::Internal("no attempt records");
  std::sort(run.begin(), run.end());
  KernelCost c;
  c.run_p50_ms = 1000 * run[run.size() / 2];
  double sum = 0;
  for (double r : run) sum += r;
  c.run_mean_ms = 1000 * sum / run.size();
  c.wall_per_task_ms = 1000 * wall / tasks;
  return c;
}

// The exec kernel's cost per task against noop's, printed before the
// policy runs (docs/benchmarks/dispatch.md, "exec").
Status ReportExecOverhead(const LiveOptions& o, std::FILE* out) {
  constexpr uint32_t kTasks = 300;
  ExecArgs t;
  t.argv = {"/bin/true"};
  auto exec = MeasureKernelCost(o, "exec", FormatExecArgs(t).value(), kTasks);
  if (!exec.ok()) return exec.status();
  auto noop = MeasureKernelCost(o, "noop", "", kTasks);
  if (!noop.ok()) return noop.status();
  std::fprintf(out,
               "exec overhead (spawning /bin/true, %u tasks, 1 executor x 1 slot): kernel run time p50 %.3f ms, "
               "mean %.3f ms; job wall time per task %.3f ms (noop: %.3f ms, so exec adds %.3f ms per task)\n",
               kTasks, exec->run_p50_ms, exec->run_mean_ms, exec->wall_per_task_ms, noop->wall_per_task_ms,
               exec->wall_per_task_ms - noop->wall_per_task_ms);
  return Status::Ok();
}

}  // namespace

SimResult LiveBound(const Scenario& sc, const LiveOptions& o) {
  const LiveModel& l = sc.live;
  Scenario m = LiveReferenceModel(sc, o);
  const uint32_t jobs = static_cast<uint32_t>(m.workload.jobs);
  const std::vector<double> arrivals = LiveArrivals(l, o.seed, jobs);
  BoundOptions bo;
  bo.seed = o.seed;
  if (l.arrival != "closed") bo.arrivals = &arrivals;
  return ClairvoyantBound(m, bo);
}

std::string BenchTracePath(const std::string& path, const std::string& entry, bool several) {
  if (!several) return path;
  size_t slash = path.find_last_of('/'), dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + "." + entry;
  return path.substr(0, dot) + "." + entry + path.substr(dot);
}

int RunBenchCommand(const BenchCommandOptions& bo) {
  const SimCommandOptions& o = bo.common;
  if (o.scenario.empty()) {
    std::fprintf(stderr, "tailcut bench: no scenario file given\n");
    return 2;
  }
  if (GetLogLevel() < LogLevel::kWarn) SetLogLevel(LogLevel::kWarn);  // the in-process scheduler's per-job lines
  signal(SIGPIPE, SIG_IGN);
  auto wall0 = Clock::now();
  auto sc = LoadScenario(o.scenario);
  if (!sc.ok()) {
    std::fprintf(stderr, "tailcut bench: %s\n", sc.status().message().c_str());
    return 2;
  }
  LiveOptions lo;
  lo.executor_path = bo.executor;
  lo.seed = o.has_seed ? o.seed : sc->seed;
  lo.jobs = bo.jobs;
  std::string name = sc->name.empty() ? o.scenario : sc->name;
  const LiveModel& l = sc->live;
  const std::string entries = o.policies.empty() ? sc->chain : o.policies;
  const bool several = entries.find(',') != std::string::npos;
  std::string args = TaskArgs(l);
  std::replace(args.begin(), args.end(), '\n', ' ');  // exec's lines, on one line
  std::fprintf(stderr,
               "bench: %s live: %u executors x %u slots, %s %s, %u jobs x %u tasks, %s arrivals (%.2f jobs/s)\n",
               name.c_str(), l.executors, l.slots, l.kernel.c_str(), args.c_str(), lo.jobs ? lo.jobs : l.jobs,
               l.tasks_per_job, l.arrival.c_str(), l.arrival == "closed" ? 0.0 : LiveRate(l));
  if (l.kernel == "exec")
    if (Status s = ReportExecOverhead(lo, o.json ? stderr : stdout); !s.ok()) {
      std::fprintf(stderr, "tailcut bench: %s\n", s.message().c_str());
      return 1;
    }
  // Interleaved rounds run first, entry after entry within each round;
  // ComparePolicies then takes each entry's merged rounds.
  const uint32_t rounds = std::max<uint32_t>(bo.rounds, 1);
  const uint32_t total_jobs = lo.jobs ? lo.jobs : l.jobs;
  std::map<std::string, StatusOr<SimResult>> merged;
  for (uint32_t k = 0; rounds > 1 && k < rounds; ++k)
    for (const std::string& entry : SplitPolicyList(entries)) {
      auto it = merged.find(entry);
      if (it != merged.end() && !it->second.ok()) continue;  // it failed: reported once
      LiveOptions run = lo;
      run.seed = lo.seed + k;  // the same arrivals and faults for every entry of the round
      run.jobs = (total_jobs + rounds - 1) / rounds;
      if (!bo.trace.empty() && k == 0) run.trace_path = BenchTracePath(bo.trace, entry, several);
      std::fprintf(stderr, "bench: round %u of %u, policy %s\n", k + 1, rounds, entry.c_str());
      auto r = RunLivePolicy(*sc, entry, run);
      if (it == merged.end() || !r.ok())
        merged.insert_or_assign(entry, std::move(r));
      else
        MergeRound(&*it->second, *r);
    }
  std::vector<SimResult> shown;
  int rc = ComparePolicies(
      o, *sc, "tailcut bench",
      "scenario " + name + " (live), seed " + std::to_string(lo.seed) +
          (rounds > 1 ? " + round, " + std::to_string(rounds) + " interleaved rounds" : ""),
      "live job latency CDF: " + name,
      [&](const std::string& entry) {
        LiveOptions run = lo;
        if (!bo.trace.empty()) run.trace_path = BenchTracePath(bo.trace, entry, several);
        auto r = rounds > 1 ? merged.at(entry) : RunLivePolicy(*sc, entry, run);
        if (r.ok()) shown.push_back(*r);
        if (r.ok() && !run.trace_path.empty())
          std::fprintf(stderr, "bench: trace written to %s\n", run.trace_path.c_str());
        if (r.ok())
          std::fprintf(stderr,
                       "bench: %s, policy %s: %llu jobs, %llu attempts (%llu copies), %.1f s workload, %.1f s wall\n",
                       name.c_str(), entry.c_str(), static_cast<unsigned long long>(r->jobs),
                       static_cast<unsigned long long>(r->attempts), static_cast<unsigned long long>(r->copies),
                       r->virtual_s, r->wall_s);
        return r;
      },
      [&] { return LiveBound(*sc, lo); },
      // On LiveBound's model; the measured none is one candidate of the sweep.
      [&](const SimResult& none) { return OnlineRow(LiveReferenceModel(*sc, lo), lo.seed, none, "bench"); });
  if (!shown.empty()) PrintIntervals(o.json ? stderr : stdout, shown, rounds);
  std::fprintf(stderr, "bench: total wall time %.1f s\n", Since(wall0));
  return rc;
}

}  // namespace tailcut::sim
