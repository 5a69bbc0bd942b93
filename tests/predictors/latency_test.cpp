#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "quantile_predictor.h"
#include "regression_predictor.h"
#include "tailcut/predictors/straggler.h"

using namespace tailcut;

namespace {

AttemptRecord Rec(std::string cls, double run_s, double input = 0, ExecutorId e = 1,
                  AttemptOutcome out = AttemptOutcome::kCommitted) {
  AttemptRecord r;
  r.task_class = std::move(cls);
  r.run_s = run_s;
  r.input_size = input;
  r.executor = e;
  r.started = 0;
  r.finished = run_s;
  r.outcome = out;
  return r;
}

}  // namespace

TEST_CASE("QuantilePredictor: per-class median/p90/p99 from lognormal samples", "[predictors][quantile]") {
  QuantilePredictor p;
  std::mt19937_64 rng(1);
  std::normal_distribution<double> z(0, 0.3);
  for (int i = 0; i < 20000; ++i) {
    p.Observe(Rec("a", 2.0 * std::exp(z(rng))));
    p.Observe(Rec("b", 10.0 * std::exp(z(rng))));
  }
  LatencyEstimate a = p.Predict("a", 0, 0);
  REQUIRE(a.known());
  CHECK(a.samples == 20000);
  CHECK(a.median == Approx(2.0).epsilon(0.02));
  CHECK(a.p90 == Approx(2.0 * std::exp(1.2816 * 0.3)).epsilon(0.03));
  CHECK(a.p99 == Approx(2.0 * std::exp(2.3263 * 0.3)).epsilon(0.05));
  CHECK(p.Predict("b", 0, 0).median == Approx(10.0).epsilon(0.02));
  CHECK_FALSE(p.Predict("nope", 0, 0).known());
  CHECK(p.classes() == 2);
}

TEST_CASE("predictors: a client naming a new class per task costs at most max_classes classes", "[predictors]") {
  PredictorOptions o;
  o.min_samples = 1;
  o.max_classes = 3;
  QuantilePredictor q(o);
  RegressionPredictor r(o);
  for (LatencyPredictor* p : {static_cast<LatencyPredictor*>(&q), static_cast<LatencyPredictor*>(&r)}) {
    p->Observe(Rec("kept", 1.0, 10));
    for (int i = 0; i < 100; ++i) {
      p->Observe(Rec("junk-" + std::to_string(i), 5.0, 10));
      p->Observe(Rec("kept", 1.0, 10));  // in use: never the least recently updated
    }
    CHECK(p->Predict("kept", 10, 0).median == Approx(1.0).epsilon(0.02));
    CHECK(p->Predict("junk-99", 10, 0).known());
    CHECK_FALSE(p->Predict("junk-0", 10, 0).known());  // evicted
    // Asking is not updating: "junk-98" is still the next to go.
    for (int i = 0; i < 10; ++i) CHECK(p->Predict("junk-98", 10, 0).known());
    p->Observe(Rec("kept", 1.0, 10));
    p->Observe(Rec("fresh", 2.0, 10));
    CHECK_FALSE(p->Predict("junk-98", 10, 0).known());
    CHECK(p->Predict("junk-99", 10, 0).known());
  }
  CHECK(q.classes() == 3);
}

TEST_CASE("QuantilePredictor: only committed attempts with a duration count", "[predictors][quantile]") {
  PredictorOptions o;
  o.min_samples = 1;
  QuantilePredictor p(o);
  p.Observe(Rec("a", 5.0, 0, 1, AttemptOutcome::kSuperseded));
  p.Observe(Rec("a", 5.0, 0, 1, AttemptOutcome::kFailed));
  p.Observe(Rec("a", 5.0, 0, 1, AttemptOutcome::kCancelled));
  p.Observe(Rec("a", 0.0));
  CHECK_FALSE(p.Predict("a", 0, 0).known());
  p.Observe(Rec("a", 5.0));
  CHECK(p.Predict("a", 0, 0).known());
}

TEST_CASE("QuantilePredictor: unknown until min_samples", "[predictors][quantile]") {
  QuantilePredictor p;  // min_samples 5
  for (int i = 0; i < 4; ++i) p.Observe(Rec("a", 1.0));
  CHECK_FALSE(p.Predict("a", 0, 0).known());
  RunningAttempt ra;
  ra.task_class = "a";
  ra.elapsed = 100;
  CHECK(p.Assess(ra).p_straggler == 0);
  p.Observe(Rec("a", 1.0));
  CHECK(p.Predict("a", 0, 0).known());
}

TEST_CASE("RegressionPredictor: recovers a power law and predicts by input size", "[predictors][regression]") {
  RegressionPredictor p;
  std::mt19937_64 rng(2);
  std::normal_distribution<double> z(0, 0.2);
  std::uniform_real_distribution<double> lx(0, std::log(1000.0));
  for (int i = 0; i < 5000; ++i) {
    double x = std::exp(lx(rng));
    p.Observe(Rec("k", 0.01 * x * std::exp(z(rng)), x));
  }
  double a = 0, b = 0;
  REQUIRE(p.Coefficients("k", &a, &b));
  CHECK(b == Approx(1.0).margin(0.02));
  CHECK(a == Approx(std::log(0.01)).margin(0.05));
  CHECK(p.Predict("k", 10, 0).median == Approx(0.1).epsilon(0.05));
  CHECK(p.Predict("k", 500, 0).median == Approx(5.0).epsilon(0.05));
  // Without an input size it falls back to the class distribution.
  LatencyEstimate any = p.Predict("k", 0, 0);
  REQUIRE(any.known());
  CHECK(any.p90 > 10 * any.median / 3);
}

TEST_CASE("RegressionPredictor: Huber weights keep stragglers from biasing the fit", "[predictors][regression]") {
  RegressionPredictor p;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> z(0, 0.1);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < 5000; ++i) {
    double x = std::exp(u(rng) * 4);
    double f = u(rng) < 0.1 ? 6.0 : 1.0;  // 10% stragglers
    p.Observe(Rec("k", 2.0 * x * std::exp(z(rng)) * f, x));
  }
  CHECK(p.Predict("k", 5, 0).median == Approx(10.0).epsilon(0.04));
}

TEST_CASE("Straggler scoring: a big input is not a straggler under regression", "[predictors][straggler]") {
  PredictorOptions o;
  RegressionPredictor reg(o);
  QuantilePredictor qua(o);
  std::mt19937_64 rng(4);
  std::normal_distribution<double> z(0, 0.2);
  std::uniform_real_distribution<double> lx(0, std::log(100.0));
  for (int i = 0; i < 5000; ++i) {
    double x = std::exp(lx(rng));
    AttemptRecord r = Rec("k", 1.0 * x * std::exp(z(rng)), x);
    reg.Observe(r);
    qua.Observe(r);
  }
  RunningAttempt big;
  big.task_class = "k";
  big.input_size = 90;
  big.elapsed = 60;  // normal for x=90, far beyond the class median (~10)
  CHECK(reg.Assess(big).p_straggler < 0.05);
  RunningAttempt slow = big;
  slow.input_size = 5;
  slow.elapsed = 20;  // 4x the expected 5 s
  CHECK(reg.Assess(slow).p_straggler == 1.0);  // beyond the threshold already
  slow.elapsed = 6;
  slow.progress = 0.25;  // LATE: will take 24 s
  StragglerEstimate s = reg.Assess(slow);
  CHECK(s.expected_total == Approx(24));
  CHECK(s.time_left == Approx(18));
  CHECK(s.p_straggler > 0.9);
}

TEST_CASE("Straggler scoring: conditional survival without progress", "[predictors][straggler]") {
  PredictorOptions o;
  QuantilePredictor p(o);
  std::mt19937_64 rng(5);
  std::normal_distribution<double> z(0, 0.3);
  for (int i = 0; i < 20000; ++i) p.Observe(Rec("a", 10.0 * std::exp(z(rng))));
  LogTimeDist d = p.Distribution("a", 0);
  const double L = StragglerThreshold(d, o.straggler);
  // max(1.5, exp(3 * 0.3)) x median
  CHECK(L == Approx(10.0 * std::exp(0.9)).epsilon(0.03));
  RunningAttempt ra;
  ra.task_class = "a";
  double prev = -1;
  for (double e : {0.0, 5.0, 10.0, 15.0, 20.0, 23.0}) {
    ra.elapsed = e;
    StragglerEstimate s = p.Assess(ra);
    CHECK(s.p_straggler >= prev);  // monotone in elapsed
    CHECK(s.p_straggler <= 1.0);
    CHECK(s.expected_total > e);
    CHECK(s.time_left == Approx(s.expected_total - e));
    prev = s.p_straggler;
  }
  ra.elapsed = 0;
  CHECK(p.Assess(ra).p_straggler < 0.01);
  CHECK(p.Assess(ra).expected_total == Approx(10.0).epsilon(0.02));
  ra.elapsed = 30;
  CHECK(p.Assess(ra).p_straggler == 1.0);
  // A slow executor shifts the distribution: the same elapsed is less surprising... and
  // more likely to end beyond the (executor-independent) threshold.
  ra.elapsed = 12;
  double p1 = AssessFromDistribution(d, ra, o.straggler, 1.0).p_straggler;
  double p3 = AssessFromDistribution(d, ra, o.straggler, 3.0).p_straggler;
  CHECK(p3 > p1);
  CHECK(p3 == Approx(0.75).margin(0.05));  // S(ln(24.6/30)) on the shifted distribution
}

TEST_CASE("Straggler scoring: LATE estimate works without history", "[predictors][straggler]") {
  QuantilePredictor p;
  RunningAttempt ra;
  ra.task_class = "new";
  ra.elapsed = 10;
  ra.progress = 0.5;
  StragglerEstimate s = p.Assess(ra);
  CHECK(s.time_left == Approx(10));
  CHECK(s.expected_total == Approx(20));
  CHECK(s.p_straggler == 0);
}
