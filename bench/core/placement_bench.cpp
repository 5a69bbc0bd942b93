// Placement at scale (issue 41, docs/SCALE.md "Placement at scale"), in
// core_bench's binary:
//
//   build/bench/core/core_bench --benchmark_filter='BM_PlacementFull|BM_PlacementQueued'
//
// * BM_PlacementQueued: the pump queueing a big job's tasks behind running
//                       work (pipelining, the job phase of a no-op run):
//                       N executors x 4 slots busy with the job's first
//                       attempts, then 100,000 tasks placed by PickQueue in
//                       one TakeCommands; ns of CPU per placed task, timed
//                       alone (UseManualTime, the thread's CPU time: a
//                       shared machine's load does not count). N = 1,000
//                       and 10,000 (issue 41).
// * BM_PlacementFull:   the steady state of a no-op job larger than the
//                       fleet's queues (run times of 2 ms: 2 queued per
//                       slot, 12 attempts per executor): one result from a
//                       random executor, then the pump places one task
//                       where room freed; ns per task (result + placement).
//                       N = 1,000 and 10,000 executors x 4 slots.
#include <benchmark/benchmark.h>

#include <ctime>
#include <deque>
#include <random>
#include <vector>

#include "bench_fleet.h"
#include "tailcut/common/clock.h"
#include "tailcut/common/log.h"
#include "tailcut/core/scheduler_core.h"

using namespace tailcut;
using tailcut::bench::Exec;
using tailcut::bench::Fanout;

namespace {

double ThreadCpuS() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void BM_PlacementQueued(benchmark::State& st) {
  SetLogLevel(LogLevel::kWarn);
  const int n = static_cast<int>(st.range(0));
  constexpr uint32_t kSlots = 4, kQueued = 100000;
  FakeClock clock;
  CoreOptions o;
  o.lost_after_s = 0;
  o.job_retention = 4;
  SchedulerCore core(o, &clock);
  for (int i = 0; i < n; ++i) core.AddExecutor(Exec(i, kSlots));
  std::vector<Command> cmds;
  std::vector<AttemptId> launched;
  JobDef job = Fanout(static_cast<uint32_t>(n) * kSlots + kQueued);
  auto take = [&] {
    cmds.clear();
    core.TakeCommands(&cmds);
    size_t k = 0;
    for (const Command& c : cmds)
      if (auto* l = std::get_if<LaunchCmd>(&c)) launched.push_back(l->attempt), ++k;
    return k;
  };
  size_t placed = 0;
  double timed_s = 0;
  for (auto _ : st) {
    launched.clear();
    clock.Advance(1);
    (void)core.SubmitJob(job);
    take();  // the first attempts: every slot (PickFree)
    // Four results make the job a pipelined one (QueuePerSlot).
    for (int i = 0; i < 4; ++i) {
      core.AttemptStarted(launched[i]);
      core.AttemptSucceeded(launched[i], "", 1e-5);
    }
    const double t0 = ThreadCpuS();
    size_t k = take();  // queued behind them (PickQueue)
    const double s = ThreadCpuS() - t0;
    st.SetIterationTime(s);
    timed_s += s;
    placed += k;
    for (size_t i = 4; i < launched.size(); ++i) {
      core.AttemptStarted(launched[i]);
      core.AttemptSucceeded(launched[i], "", 1e-5);
    }
    take();
  }
  st.counters["placed_per_iter"] = static_cast<double>(placed) / static_cast<double>(st.iterations());
  st.counters["ns_per_task"] = placed ? timed_s * 1e9 / static_cast<double>(placed) : 0;
}

void BM_PlacementFull(benchmark::State& st) {
  SetLogLevel(LogLevel::kWarn);
  const int n = static_cast<int>(st.range(0));
  FakeClock clock;
  CoreOptions o;
  o.lost_after_s = 0;
  o.max_tasks_per_job = o.max_queued_tasks = 4'000'000;
  SchedulerCore core(o, &clock);
  std::vector<std::deque<AttemptId>> on(n + 1);  // by executor id: its attempts, oldest first
  for (int i = 0; i < n; ++i) core.AddExecutor(Exec(i, 4));
  std::vector<Command> cmds;
  auto take = [&] {
    cmds.clear();
    core.TakeCommands(&cmds);
    for (const Command& c : cmds)
      if (auto* l = std::get_if<LaunchCmd>(&c)) on[l->executor].push_back(l->attempt);
  };
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int> pick(1, n);
  auto finish_one = [&] {
    std::deque<AttemptId>& q = on[pick(rng)];
    if (q.empty()) return false;
    core.AttemptStarted(q.front());
    core.AttemptSucceeded(q.front(), "", 2e-3);
    q.pop_front();
    take();
    return true;
  };
  (void)core.SubmitJob(Fanout(4'000'000));
  take();
  for (int i = 0; i < 10 * n; ++i) finish_one();  // pipelining on, every queue full
  size_t tasks = 0;
  for (auto _ : st) tasks += finish_one();
  st.SetItemsProcessed(static_cast<int64_t>(tasks));
  st.counters["ns_per_task"] =
      benchmark::Counter(static_cast<double>(tasks), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_PlacementFull)->Arg(1000)->Arg(10000)->Iterations(200000);

BENCHMARK(BM_PlacementQueued)->Arg(1000)->Arg(10000)->UseManualTime()->Iterations(8)->Unit(benchmark::kMillisecond);

}  // namespace
