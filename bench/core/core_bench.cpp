// Scheduler-core micro-benchmarks (docs/benchmarks/dispatch.md, "Micro-benchmarks").
//
//   build/bench/core/core_bench --benchmark_counters_tabular=true
//
// * BM_CoreCycle:       submit a 1-task job -> launch -> started -> succeeded
//                       -> job finished, through SchedulerCore on a FakeClock.
// * BM_CoreFanoutTask:  the same per task of a 100-task fan-out job.
// * BM_Placement:       one placement decision (submit + Pump) with N
//                       executors, half of the slots busy.
// * BM_PlacementQueued, BM_PlacementFull: placement_bench.cpp.
// * BM_Encode/Decode*:  protobuf cost per task of a batched Work (Assignment)
//                       and a batched Report (AttemptResult).
// * BM_PolicyTick:      one OnTick of a policy (default_replaying: `default`
//                       with a replay engine whose replays never land) over a ClusterView with
//                       10,000 running attempts (100 jobs x 100 running
//                       tasks, 1,000 executors x 10 slots, 900 committed run
//                       times per job, warmed predictors). Proposals are
//                       discarded, so every tick sees the same state.
// * BM_EventPathTask:   the event path per attempt with a policy chain
//                       (none / default; default_replaying: with a replay
//                       engine whose replays never land, as the daemon's
//                       before its first verdict; default_switched: one
//                       whose verdicts pick `late`, so two candidate chains
//                       see the events): launch -> started -> progress ->
//                       succeeded, every policy hook, wake-up and cached
//                       avoid refresh included; 1,000 executors x 4 slots,
//                       100-task jobs, run times of 0.05-0.4 s on a
//                       FakeClock so wake-ups come due.
// * BM_WaitingWork:     BM_CoreCycle's one-task job, and a driver tick
//                       (Tick + TakeCommands) between jobs, with N one-task
//                       jobs waiting that no executor can place (a kernel
//                       none offers, each job its own keyless user): N = 0
//                       and 10,000 side by side (docs/PLACEMENT.md,
//                       "Waiting work"; issue 35: "costs nothing").
// Predictor update cost: bench/predictors (BM_SuiteObserve).
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "bench_fleet.h"
#include "tailcut.pb.h"
#include "tailcut/common/clock.h"
#include "tailcut/common/log.h"
#include "tailcut/core/scheduler_core.h"
#include "tailcut/policies/registry.h"
#include "tailcut/policies/replay.h"
#include "tailcut/predictors/predictor.h"

using namespace tailcut;
using tailcut::bench::Exec;
using tailcut::bench::Fanout;

namespace {

// Drives the core's commands like a perfect executor: every launch starts
// and succeeds at once. Returns the number of tasks completed.
// A replay engine without a simulator: its replays never land (`prefer`
// empty), or land at once with `prefer` the best candidate.
class BenchEngine final : public ReplayEngine {
 public:
  explicit BenchEngine(std::string prefer) : prefer_(std::move(prefer)) {}
  bool Start(const ReplayModel&, const std::vector<std::string>& candidates) override {
    candidates_ = candidates;
    return true;
  }
  bool Poll(std::vector<ReplayScore>* out) override {
    if (prefer_.empty() || candidates_.empty()) return false;
    for (const std::string& c : candidates_) {
      ReplayScore s;
      s.candidate = c;
      s.ran = true;
      s.p50 = 1;
      s.p99 = c == prefer_ ? 0.5 : c == "none" ? 1 : 2;
      out->push_back(s);
    }
    candidates_.clear();
    return true;
  }

 private:
  std::string prefer_;
  std::vector<std::string> candidates_;
};

PolicyServices BenchServices(const char* replay) {
  PolicyServices services;
  if (replay)
    services.replay = [replay] { return std::unique_ptr<ReplayEngine>(std::make_unique<BenchEngine>(replay)); };
  return services;
}

size_t DrainAndComplete(SchedulerCore& core, std::vector<Command>& cmds) {
  size_t n = 0;
  for (;;) {
    cmds.clear();
    core.TakeCommands(&cmds);
    bool any = false;
    for (const Command& c : cmds)
      if (auto* l = std::get_if<LaunchCmd>(&c)) {
        core.AttemptStarted(l->attempt);
        core.AttemptSucceeded(l->attempt, "", 0.01);
        any = true;
        n++;
      }
    if (!any) return n;
  }
}

// BM_CoreCycle's core: 64 executors x 4 slots, no heartbeats, 100
// finished jobs retained.
struct CycleCore {
  static CoreOptions Options() {
    CoreOptions o;
    o.lost_after_s = 0;
    o.job_retention = 100;
    return o;
  }
  CycleCore() : core(Options(), &clock) {
    for (int i = 0; i < 64; ++i) core.AddExecutor(Exec(i, 4));
  }
  FakeClock clock;
  SchedulerCore core;
};

void BM_CoreCycle(benchmark::State& st) {
  SetLogLevel(LogLevel::kWarn);
  CycleCore c;
  SchedulerCore& core = c.core;
  FakeClock& clock = c.clock;
  std::vector<Command> cmds;
  JobDef job = Fanout(1);
  for (auto _ : st) {
    clock.Advance(1e-4);
    auto id = core.SubmitJob(job);
    benchmark::DoNotOptimize(id);
    DrainAndComplete(core, cmds);
  }
  // Events per cycle: submit, started, succeeded (+ the launch and
  // job-finished commands).
  st.counters["events_per_s"] = benchmark::Counter(3.0 * st.iterations(), benchmark::Counter::kIsRate);
  st.counters["ns_per_event"] =
      benchmark::Counter(3.0 * st.iterations(), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_CoreCycle);

void BM_WaitingWork(benchmark::State& st) {
  SetLogLevel(LogLevel::kError);
  CycleCore c;
  std::vector<Command> cmds;
  for (int64_t i = 0; i < st.range(0); ++i) {
    JobDef waits = Fanout(1);
    waits.templ.kernel = "not_offered";
    waits.wait_for_resources = true;
    waits.owner = "user:u" + std::to_string(i);
    if (!c.core.SubmitJob(std::move(waits)).ok()) st.SkipWithError("a waiting job was refused");
    c.core.TakeCommands(&cmds);
  }
  JobDef job = Fanout(1);
  for (auto _ : st) {
    c.clock.Advance(1e-4);
    c.core.Tick();  // what a driver does between events
    DrainAndComplete(c.core, cmds);
    auto id = c.core.SubmitJob(job);
    benchmark::DoNotOptimize(id);
    DrainAndComplete(c.core, cmds);
  }
  st.counters["visits_per_job"] =
      static_cast<double>(c.core.Counters().placement_visits) / static_cast<double>(st.iterations() + st.range(0));
}
BENCHMARK(BM_WaitingWork)->Arg(0)->Arg(10000);

void BM_CoreFanoutTask(benchmark::State& st) {
  SetLogLevel(LogLevel::kWarn);
  FakeClock clock;
  CoreOptions o;
  o.lost_after_s = 0;
  o.job_retention = 100;
  SchedulerCore core(o, &clock);
  for (int i = 0; i < 64; ++i) core.AddExecutor(Exec(i, 4));
  std::vector<Command> cmds;
  JobDef job = Fanout(100);
  size_t tasks = 0;
  for (auto _ : st) {
    clock.Advance(1e-3);
    (void)core.SubmitJob(job);
    tasks += DrainAndComplete(core, cmds);
  }
  st.SetItemsProcessed(static_cast<int64_t>(tasks));
  st.counters["ns_per_task"] =
      benchmark::Counter(static_cast<double>(tasks), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_CoreFanoutTask);

void BM_Placement(benchmark::State& st) {
  SetLogLevel(LogLevel::kWarn);
  const int n = static_cast<int>(st.range(0));
  FakeClock clock;
  CoreOptions o;
  o.lost_after_s = 0;
  o.job_retention = 100;
  o.pipeline_s = 0;
  SchedulerCore core(o, &clock);
  for (int i = 0; i < n; ++i) core.AddExecutor(Exec(i, 2));
  // A long job holds half of the slots for the whole benchmark.
  std::vector<Command> cmds;
  (void)core.SubmitJob(Fanout(static_cast<uint32_t>(n)));
  core.TakeCommands(&cmds);
  for (const Command& c : cmds)
    if (auto* l = std::get_if<LaunchCmd>(&c)) core.AttemptStarted(l->attempt);
  JobDef job = Fanout(1);
  for (auto _ : st) {
    clock.Advance(1e-4);
    (void)core.SubmitJob(job);
    DrainAndComplete(core, cmds);
  }
  st.counters["executors"] = n;
}
BENCHMARK(BM_Placement)->Arg(16)->Arg(1024)->Arg(10000);

wire::SchedulerToExecutor MakeWork(int batch) {
  wire::SchedulerToExecutor m;
  m.set_version(1);
  auto* w = m.mutable_work();
  for (int i = 0; i < batch; ++i) {
    auto* a = w->add_assign();
    a->set_attempt_id(1000000 + i);
    a->set_job_id(4242);
    a->set_task_index(i);
    a->set_kernel("sleep");
    a->set_args("ms=20 sigma=0.3");
    a->mutable_demand()->set_cpu_slots(1);
  }
  return m;
}

wire::ExecutorMessage MakeReport(int batch) {
  wire::ExecutorMessage m;
  m.set_version(1);
  auto* r = m.mutable_report();
  for (int i = 0; i < batch; ++i) {
    auto* res = r->add_results();
    res->set_attempt_id(1000000 + i);
    res->set_outcome(wire::AttemptResult::OK);
    res->set_run_s(0.0213 + i * 1e-6);
  }
  r->mutable_signals()->set_load(0.5);
  return m;
}

template <typename Msg>
void Encode(benchmark::State& st, const Msg& m) {
  std::string out;
  for (auto _ : st) {
    out.clear();
    m.SerializeToString(&out);
    benchmark::DoNotOptimize(out.data());
  }
  st.SetItemsProcessed(st.iterations() * st.range(0));
  st.counters["bytes_per_task"] = static_cast<double>(out.size()) / st.range(0);
  st.counters["ns_per_task"] = benchmark::Counter(static_cast<double>(st.iterations() * st.range(0)),
                                                  benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

template <typename Msg>
void Decode(benchmark::State& st, const Msg& m) {
  std::string bytes = m.SerializeAsString();
  Msg parsed;
  for (auto _ : st) {
    parsed.Clear();
    if (!parsed.ParseFromString(bytes)) st.SkipWithError("parse failed");
    benchmark::DoNotOptimize(parsed);
  }
  st.SetItemsProcessed(st.iterations() * st.range(0));
  st.counters["ns_per_task"] = benchmark::Counter(static_cast<double>(st.iterations() * st.range(0)),
                                                  benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_EncodeWork(benchmark::State& st) { Encode(st, MakeWork(static_cast<int>(st.range(0)))); }
void BM_DecodeWork(benchmark::State& st) { Decode(st, MakeWork(static_cast<int>(st.range(0)))); }
void BM_EncodeReport(benchmark::State& st) { Encode(st, MakeReport(static_cast<int>(st.range(0)))); }
void BM_DecodeReport(benchmark::State& st) { Decode(st, MakeReport(static_cast<int>(st.range(0)))); }
BENCHMARK(BM_EncodeWork)->Arg(1)->Arg(64)->Arg(1024);
BENCHMARK(BM_DecodeWork)->Arg(1)->Arg(64)->Arg(1024);
BENCHMARK(BM_EncodeReport)->Arg(1)->Arg(64)->Arg(1024);
BENCHMARK(BM_DecodeReport)->Arg(1)->Arg(64)->Arg(1024);

// ---- policy ticks over 10,000 running attempts ----

class FakeView final : public ClusterView {
 public:
  FakeView() : predictors_(PredictorOptions{}) {
    std::mt19937_64 rng(7);
    std::lognormal_distribution<double> run(0.0, 0.3);  // median 1 s
    std::uniform_real_distribution<double> u(0, 1);
    const int kJobs = 100, kRunning = 100, kCommitted = 900, kExecs = 1000;  // 90%: spark's quantile
    now_ = 100;
    def_ = Fanout(kRunning + kCommitted);
    for (int e = 1; e <= kExecs; ++e) {
      ExecutorView v;
      v.id = static_cast<ExecutorId>(e);
      v.slots = 10;
      v.used_slots = 10;
      v.running = 10;
      v.finished = 100;
      execs_.push_back(v);
      names_.push_back("exec-" + std::to_string(e));
    }
    for (auto& v : execs_) v.name = names_[v.id - 1];
    AttemptId next = 1;
    for (int j = 1; j <= kJobs; ++j) {
      JobView jv;
      jv.id = static_cast<JobId>(j);
      jv.def = &def_;
      jv.submitted = now_ - 5;
      jv.tasks = kRunning + kCommitted;
      jv.committed = kCommitted;
      jv.running = kRunning;
      jv.needed = jv.tasks;
      jobs_.push_back(jv);
      std::vector<float> times;
      for (int k = 0; k < kCommitted; ++k) times.push_back(static_cast<float>(run(rng)));
      committed_.push_back(times);
      auto sorted = times;
      std::sort(sorted.begin(), sorted.end());
      medians_.push_back(sorted[sorted.size() / 2]);
      for (int t = 0; t < kRunning; ++t) {
        AttemptView a;
        a.attempt = next++;
        a.job = jv.id;
        a.task = static_cast<TaskIndex>(kCommitted + t);
        a.executor = static_cast<ExecutorId>(1 + (a.attempt % kExecs));
        a.started = now_ - 5 * u(rng);  // 40% past spark's 3x the ~1 s median
        a.queued = a.started - 0.001;
        a.progress = static_cast<float>(std::min(1.0, (now_ - a.started) / run(rng)));
        attempts_.push_back(a);
      }
    }
    // Warm predictors: 20,000 finished attempts, 2% on a slow executor.
    for (int i = 0; i < 20000; ++i) {
      AttemptRecord r;
      r.job = 1 + i % kJobs;
      r.task = static_cast<TaskIndex>(i % 50);
      r.attempt = 1000000 + i;
      r.executor = 1 + i % kExecs;
      r.task_class = "sleep";
      r.queued = 50 + i * 0.002;
      r.started = r.queued + 0.001;
      r.run_s = run(rng) * (r.executor == 7 ? 5 : 1);
      r.finished = r.started + r.run_s;
      r.outcome = AttemptOutcome::kCommitted;
      predictors_.Observe(r);
    }
    predictors_.HealthTransitions();
  }
  Time Now() const override { return now_; }
  void ForEachJob(const std::function<void(const JobView&)>& fn) const override {
    for (auto& j : jobs_) fn(j);
  }
  void ForEachRunningAttempt(const std::function<void(const AttemptView&)>& fn) const override {
    for (auto& a : attempts_) fn(a);
  }
  void ForEachExecutor(const std::function<void(const ExecutorView&)>& fn) const override {
    for (auto& e : execs_) fn(e);
  }
  bool FindJob(JobId job, JobView* out) const override {
    if (job == 0 || job > jobs_.size()) return false;
    *out = jobs_[job - 1];
    return true;
  }
  bool FindExecutor(ExecutorId e, ExecutorView* out) const override {
    if (e == 0 || e > execs_.size()) return false;
    *out = execs_[e - 1];
    return true;
  }
  const std::vector<float>& CommittedRunTimes(JobId job) const override { return committed_.at(job - 1); }
  double MedianRunTime(JobId job) const override { return medians_.at(job - 1); }
  uint32_t CopiesAllowed() const override { return 1000; }
  uint32_t TotalSlots() const override { return 10000; }
  const PredictorSuite* Predictors() const override { return &predictors_; }
  size_t attempts() const { return attempts_.size(); }

 private:
  Time now_ = 0;
  JobDef def_;
  std::vector<ExecutorView> execs_;
  std::vector<std::string> names_;
  std::vector<JobView> jobs_;
  std::vector<AttemptView> attempts_;
  std::vector<std::vector<float>> committed_;
  std::vector<double> medians_;
  PredictorSuite predictors_;
};

const FakeView& View() {
  static const FakeView v;
  return v;
}

void BM_PolicyTick(benchmark::State& st, const char* chain_name, const char* replay = nullptr) {
  SetLogLevel(LogLevel::kWarn);
  const FakeView& view = View();
  auto chain = MakePolicyChain(chain_name, Config{}, BenchServices(replay));
  if (!chain.ok()) {
    st.SkipWithError(chain.status().message().c_str());
    return;
  }
  std::vector<Proposal> proposals;
  size_t proposed = 0;
  for (auto _ : st) {
    for (auto& p : *chain) {
      proposals.clear();
      p->OnTick(view, &proposals);
      proposed += proposals.size();
    }
  }
  st.counters["attempts"] = static_cast<double>(view.attempts());
  st.counters["proposals_per_tick"] = static_cast<double>(proposed) / std::max<int64_t>(1, st.iterations());
  st.counters["ns_per_attempt"] = benchmark::Counter(static_cast<double>(st.iterations() * view.attempts()),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK_CAPTURE(BM_PolicyTick, spark, "spark")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PolicyTick, late, "late")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PolicyTick, hedge, "hedge")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PolicyTick, predictive, "predictive")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PolicyTick, reassign, "reassign")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PolicyTick, default_chain, "default")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PolicyTick, default_replaying, "default", "")->Unit(benchmark::kMicrosecond);

}  // namespace


namespace {

void BM_EventPathTask(benchmark::State& st, const char* chain_name, const char* replay) {
  SetLogLevel(LogLevel::kWarn);
  FakeClock clock;
  CoreOptions o;
  o.lost_after_s = 0;
  o.job_retention = 100;
  auto chain = MakePolicyChain(chain_name, Config{}, BenchServices(replay));
  if (!chain.ok()) {
    st.SkipWithError(chain.status().message().c_str());
    return;
  }
  SchedulerCore core(o, &clock, std::move(chain).value());
  for (int i = 0; i < 1000; ++i) core.AddExecutor(Exec(i, 4));
  std::vector<Command> cmds;
  std::vector<AttemptId> launched;
  JobDef job = Fanout(100);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> run(0.05, 0.4);
  size_t tasks = 0;
  for (auto _ : st) {
    (void)core.SubmitJob(job);
    launched.clear();
    cmds.clear();
    core.TakeCommands(&cmds);
    for (const Command& c : cmds)
      if (auto* l = std::get_if<LaunchCmd>(&c)) launched.push_back(l->attempt);
    for (AttemptId a : launched) core.AttemptStarted(a);
    clock.Advance(0.2);  // past min_runtime_s: the first wake-ups come due
    cmds.clear();
    core.TakeCommands(&cmds);
    for (AttemptId a : launched) core.AttemptProgress(a, 0.5f);
    for (AttemptId a : launched) {
      clock.Advance(1e-3);
      core.AttemptSucceeded(a, "", run(rng));
      cmds.clear();
      core.TakeCommands(&cmds);  // copies a policy launched end with the job
    }
    tasks += launched.size();
    clock.Advance(0.5);
    core.Tick();
    cmds.clear();
    core.TakeCommands(&cmds);
  }
  st.SetItemsProcessed(static_cast<int64_t>(tasks));
  st.counters["ns_per_task"] =
      benchmark::Counter(static_cast<double>(tasks), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

}  // namespace

BENCHMARK_CAPTURE(BM_EventPathTask, none, "none", nullptr);
BENCHMARK_CAPTURE(BM_EventPathTask, default_chain, "default", nullptr);
BENCHMARK_CAPTURE(BM_EventPathTask, default_replaying, "default", "");
BENCHMARK_CAPTURE(BM_EventPathTask, default_switched, "default", "late");

BENCHMARK_MAIN();
