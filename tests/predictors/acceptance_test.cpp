// Acceptance tests for the predictors (deterministic seeds).
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

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

namespace {

// The trace kind of issue #12 point 6 (docs/benchmarks/tail.md, "Fail-slow on
// realistic traces"): 16 executors whose healthy speeds spread evenly over
// 0.8..1.2, input sizes log-uniform 1..100 (run time proportional), Gamma(9)
// run-time noise (CV 1/3), 4% random 3-8x stragglers, and one executor
// turning 2.5x slow at T = 15000 s (~14.6k tasks in) for good.
TraceGenOptions RealisticTrace(uint64_t seed) {
  TraceGenOptions g;
  g.executors = 16;
  g.tasks = 20000;
  g.speed_spread = 0.2;
  g.skew = 100;
  g.gamma_shape = 9;
  g.straggler_prob = 0.04;
  g.fail_slow_executor = static_cast<ExecutorId>(seed % 16 + 1);
  g.fail_slow_onset = 15000;
  g.fail_slow_factor = 2.5;
  g.seed = seed;
  return g;
}

}  // namespace

TEST_CASE("Acceptance: realistic traces, default predictor: 2.5x change flagged within 10 tasks, 0 false alarms",
          "[predictors][acceptance]") {
  uint64_t healthy = 0, false_alarms = 0, quantile_in_time = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const TraceGenOptions g = RealisticTrace(seed);
    auto rows = GenerateTrace(g);
    EvalReport rep = EvaluateRows(rows, EvalOptions{});  // the default predictor and detector
    REQUIRE(rep.predictor == "regression");
    REQUIRE(rep.episodes.size() == 1);
    const FailSlowEpisode& ep = rep.episodes[0];
    std::printf("realistic seed %llu (executor %llu): flagged=%d after %llu tasks, false alarms %llu over %llu healthy "
                "tasks, suspect transitions %llu\n",
                static_cast<unsigned long long>(seed), static_cast<unsigned long long>(ep.executor), ep.detected ? 1 : 0,
                static_cast<unsigned long long>(ep.delay_tasks), static_cast<unsigned long long>(rep.false_alarms),
                static_cast<unsigned long long>(rep.healthy_tasks), static_cast<unsigned long long>(rep.suspect_alarms));
    CHECK(ep.executor == g.fail_slow_executor);
    CHECK(ep.detected);
    CHECK(ep.delay_tasks <= 10);
    CHECK(rep.false_alarms == 0);
    healthy += rep.healthy_tasks;
    false_alarms += rep.false_alarms;

    EvalOptions q;
    q.predictor.latency = "quantile";
    EvalReport qr = EvaluateRows(rows, q);
    quantile_in_time += !qr.episodes.empty() && qr.episodes[0].detected && qr.episodes[0].delay_tasks <= 10;
  }
  CHECK(healthy >= 100000);
  CHECK(false_alarms == 0);
  // Why quantile is not the default: its ratio measures input size, not the
  // node, so the detector (rightly) needs far more evidence than 10 tasks.
  CHECK(quantile_in_time == 0);
}

TEST_CASE("Acceptance: a steadily slower healthy executor is not fail-slow but its change is", "[predictors][acceptance]") {
  // Speeds 0.8..1.2 as above; the 2.5x change hits the slowest executor
  // (0.8x, 1.25x the typical run time even when healthy).
  TraceGenOptions g = RealisticTrace(1);
  std::vector<double> per_exec(g.executors + 1, 0), count(g.executors + 1, 0);
  g.fail_slow_executor = 0;
  for (const TraceRow& r : GenerateTrace(g)) {
    if (r.straggler) continue;
    per_exec[r.executor] += std::log(r.duration() / r.input_size);
    count[r.executor] += 1;
  }
  ExecutorId slowest = 1;
  for (ExecutorId e = 2; e <= g.executors; ++e)
    if (per_exec[e] / count[e] > per_exec[slowest] / count[slowest]) slowest = e;

  EvalReport none = EvaluateRows(GenerateTrace(g), EvalOptions{});
  CHECK(none.fail_slow_alarms == 0);

  g.fail_slow_executor = slowest;
  EvalReport rep = EvaluateRows(GenerateTrace(g), EvalOptions{});
  REQUIRE(rep.episodes.size() == 1);
  CHECK(rep.episodes[0].executor == slowest);
  CHECK(rep.episodes[0].detected);
  CHECK(rep.episodes[0].delay_tasks <= 10);
  CHECK(rep.false_alarms == 0);
}
