// `default` on a healthy fleet of no-op tasks (issue 41, "default costs
// nothing when nothing lags"): run times of a fraction of a microsecond at
// a clock's granularity, a microsecond or two longer for hundreds of tasks
// at a time while CPU contention lasts (2-10x the task), now and then a
// preemption of up to 300 us, Reports coming a loop turn (20 us - 1 ms)
// apart. That is noise of the task's size or far above it, never a slow
// executor: the health model must mark none fail_slow, nothing may be
// quarantined, and (nearly) no task copied or restarted. The same chain and
// drive with 10 ms tasks and one executor really 5x slower must catch it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "../core/core_harness.h"
#include "tailcut/policies/registry.h"
#include "tailcut/predictors/predictor.h"

using namespace tailcut;
using tailcut::testing::CoreHarness;

namespace {

struct Fleet {
  double task_s = 0.3e-6;         // the task's own run time (lognormal, sigma 0.4)
  double contention_s = 0.6e-6;   // a loaded core adds 1-3x this to each task for a while
  double quantum_s = 20e-9;       // the clock's granularity
  double preempt_p = 0.002;       // a task preempted mid-run ...
  double preempt_max_s = 300e-6;  // ... for up to this long
  uint32_t slow_executor = 0;     // 1-based; 0 = none
  double slow_factor = 5;
  uint64_t slow_after = 0;  // tasks finished fleet-wide before it turns slow
  double split_p = 0.02;    // a Report cut between a start and its end
};

struct Outcome {
  std::set<ExecutorId> fail_slow, quarantined;
  uint64_t launches = 0, copies = 0, cancels = 0, tasks = 0;
  uint64_t first_fail_slow_task = 0;  // fleet-wide tasks finished when the slow one was first marked
};

// `maps` fan-outs of `tasks` tasks, one after the other, on `executors` x
// 2 slots under `default` (no replay engine: its first candidate, the
// clone+predictive+reassign chain). The scheduler hears from the executors
// once a turn, 20 us to 1 ms apart: an attempt starts in the turn it was
// launched, and its start is reported with its end when both fall before
// the next Report (as pipelined no-ops come back), else alone, its end in
// the Report after the one that follows its end; `split_p` of the no-ops'
// Reports are cut between the two anyway.
Outcome Run(const Fleet& f, uint32_t executors, uint32_t maps, uint32_t tasks) {
  auto chain = MakePolicyChain("default", Config());
  REQUIRE(chain.ok());
  CoreHarness h(tailcut::testing::NoHeartbeats(), std::move(chain).value());
  std::mt19937_64 rng(41);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> n01(0, 1);
  std::vector<ExecutorId> ids;
  for (uint32_t i = 0; i < executors; ++i) ids.push_back(h.Exec(2, 0, {"noop"}));
  std::map<ExecutorId, double> regime;  // how loaded the executor's core is now (0: quiet)
  for (ExecutorId e : ids) regime[e] = 0;
  Outcome out;
  uint64_t finished = 0;
  auto run_s = [&](ExecutorId e) {
    if (u(rng) < 1.0 / 300) regime[e] = regime[e] > 0 ? 0 : 1 + 2 * u(rng);  // contention comes and goes
    double t = f.task_s * std::exp(0.4 * n01(rng)) + regime[e] * f.contention_s * u(rng);
    if (f.slow_executor && e == ids[f.slow_executor - 1] && finished >= f.slow_after) t *= f.slow_factor;
    t = std::max(1.0, std::round(t / f.quantum_s)) * f.quantum_s;
    if (u(rng) < f.preempt_p) t += u(rng) * f.preempt_max_s;
    return t;
  };
  struct Run {
    double run_s, end;  // on the executor, and when (virtual time)
  };
  std::map<AttemptId, Run> running;  // started and reported so, not ended yet
  for (uint32_t m = 0; m < maps; ++m) {
    JobId job = h.Submit(CoreHarness::Fanout(tasks, "noop"));
    out.tasks += tasks;
    while (!h.finished.count(job)) {
      const Time turn = h.clock.Now();
      h.clock.Advance(20e-6 + u(rng) * 1e-3);
      std::vector<std::pair<AttemptId, ExecutorId>> live;
      for (auto& [a, l] : h.live) live.emplace_back(a, l.executor);
      REQUIRE(!live.empty());
      for (auto& [a, e] : live) {
        if (!h.live.count(a)) continue;  // cancelled by what an earlier result caused
        auto r = running.find(a);
        if (r == running.end()) {  // launched since the last turn: its start is in this Report
          const double s = run_s(e), end = turn + u(rng) * (h.clock.Now() - turn) + s;
          h.core.AttemptStarted(a);
          if (end > h.clock.Now() || u(rng) < f.split_p) {
            running[a] = {s, end};
            continue;
          }
          h.Finish(a, s);
        } else if (r->second.end <= turn) {  // ended before the last Report went out
          h.Finish(a, r->second.run_s);
          running.erase(r);
        } else {
          continue;
        }
        ++finished;
      }
      for (auto it = running.begin(); it != running.end();)
        it = h.live.count(it->first) ? std::next(it) : running.erase(it);
      h.core.Tick();
      h.Drain();
      for (const ExecutorStatusInfo& x : h.core.Executors()) {
        if (x.health.state == NodeHealth::kFailSlow && out.fail_slow.insert(x.id).second && out.fail_slow.size() == 1)
          out.first_fail_slow_task = finished;
        if (x.quarantined) out.quarantined.insert(x.id);
      }
    }
    REQUIRE(h.finished[job].state == JobState::kSucceeded);
  }
  out.launches = h.launches.size();
  for (const LaunchCmd& l : h.launches) out.copies += l.copy;
  out.cancels = h.cancels.size();
  return out;
}

}  // namespace

TEST_CASE("default on a healthy fleet of no-ops: noise of the task's size marks no executor fail_slow, moves nothing",
          "[policies][noise]") {
  const Outcome o = Run(Fleet{}, 8, 20, 5000);
  CHECK(o.fail_slow.empty());
  CHECK(o.quarantined.empty());
  // Restarts and copies below issue 41's bar for a fleet with no fault
  // (0.01% of tasks). What is left (5 of 100,000 here) are no-ops whose
  // Report was cut between start and end and whose end came two of the
  // slowest turns later: `predictive` judges an attempt once it ran 1 ms
  // (min_runtime_s) beyond the report lag and its jitter.
  CHECK(o.copies + o.cancels < o.tasks / 10000);
  CHECK(o.launches - o.tasks < o.tasks / 10000);
}

TEST_CASE("default with the same noise still catches an executor 5x slow on 10 ms tasks", "[policies][noise]") {
  Fleet f;
  f.task_s = 10e-3;
  f.slow_executor = 3;
  f.slow_after = 2000;
  const Outcome o = Run(f, 8, 4, 2000);
  CHECK(o.fail_slow == std::set<ExecutorId>{3});
  // Marked within a few hundred of the fleet's tasks (about 1 in 8 on it).
  CHECK(o.first_fail_slow_task > f.slow_after);
  CHECK(o.first_fail_slow_task < f.slow_after + 800);
}
