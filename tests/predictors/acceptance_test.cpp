// Acceptance tests for the predictors (deterministic seeds).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>

#include "tailcut/predictors/eval.h"
#include "tailcut/predictors/trace.h"

using namespace tailcut;

namespace {

// 16 executors, lognormal sigma 0.3, one executor turns 3x slower at T after
// more than 100,000 healthy tasks.
void FailSlowScenario(uint64_t seed, double straggler_prob, const char* predictor) {
  TraceGenOptions g;
  g.executors = 16;
  g.tasks = 110000;
  g.sigma = 0.3;
  g.fail_slow_executor = 5;
  g.fail_slow_onset = 7000;  // 16 executors x ~1.05 s per task -> ~106k tasks before T
  g.fail_slow_factor = 3.0;
  g.straggler_prob = straggler_prob;
  g.seed = seed;
  auto rows = GenerateTrace(g);
  uint64_t before = 0;
  for (const TraceRow& r : rows) before += r.start < g.fail_slow_onset;
  REQUIRE(before >= 100000);

  EvalOptions o;
  o.predictor.latency = predictor;
  auto t0 = std::chrono::steady_clock::now();
  EvalReport rep = EvaluateRows(rows, o);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(rep.episodes.size() == 1);
  const FailSlowEpisode& ep = rep.episodes[0];
  std::printf("fail-slow (%s, seed %llu, stragglers %.0f%%): %llu healthy tasks, detected=%d after %llu tasks / %.1f s, "
              "false alarms %llu (%.3g/h over %.1f executor-h), suspect transitions %llu, replay %.3f s\n",
              predictor, static_cast<unsigned long long>(seed), 100 * straggler_prob,
              static_cast<unsigned long long>(rep.healthy_tasks), ep.detected ? 1 : 0,
              static_cast<unsigned long long>(ep.delay_tasks), ep.delay_s,
              static_cast<unsigned long long>(rep.false_alarms), rep.false_alarms_per_hour, rep.healthy_hours,
              static_cast<unsigned long long>(rep.suspect_alarms), secs);
  CHECK(ep.executor == 5);
  CHECK(ep.detected);
  CHECK(ep.delay_tasks <= 10);
  CHECK(rep.false_alarms == 0);
  CHECK(rep.fail_slow_alarms == 1);
  CHECK(rep.healthy_tasks >= 100000);
}

}  // namespace

TEST_CASE("Acceptance: 3x fail-slow executor flagged within 10 tasks, no false alarms in 100k", "[predictors][acceptance]") {
  FailSlowScenario(1, 0.0, "quantile");
  FailSlowScenario(2, 0.0, "regression");
  FailSlowScenario(3, 0.01, "quantile");  // with 1% random 3-8x stragglers as well
}

TEST_CASE("Acceptance: skewed inputs + 5% stragglers, regression F1 >= 0.9", "[predictors][acceptance]") {
  TraceGenOptions g;
  g.executors = 16;
  g.tasks = 20000;
  g.sigma = 0.3;
  g.skew = 100;  // input_size log-uniform in [1, 100], run time proportional
  g.straggler_prob = 0.05;
  g.straggler_min = 3;
  g.straggler_max = 8;
  g.seed = 42;
  auto rows = GenerateTrace(g);
  EvalOptions o;
  o.predictor.latency = "regression";
  EvalReport reg = EvaluateRows(rows, o);
  o.predictor.latency = "quantile";
  EvalReport qua = EvaluateRows(rows, o);
  std::printf("skew: regression F1 %.3f (P %.3f R %.3f, MAPE %.1f%%) | quantile F1 %.3f (P %.3f R %.3f, MAPE %.1f%%) | "
              "monitor-mode F1 regression %.3f quantile %.3f\n",
              reg.straggler.F1(), reg.straggler.Precision(), reg.straggler.Recall(), 100 * reg.mape,
              qua.straggler.F1(), qua.straggler.Precision(), qua.straggler.Recall(), 100 * qua.mape,
              reg.straggler_monitor.F1(), qua.straggler_monitor.F1());
  CHECK(reg.straggler.F1() >= 0.9);
  CHECK(qua.straggler.F1() < reg.straggler.F1() - 0.3);
  CHECK(reg.mape < qua.mape);
}
