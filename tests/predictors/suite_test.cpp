#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "tailcut/common/config.h"
#include "tailcut/predictors/predictor.h"

using namespace tailcut;

TEST_CASE("LoadPredictorOptions: defaults, overrides, type and range errors", "[predictors][options]") {
  PredictorOptions def;
  {
    auto cfg = Config::Parse("");
    REQUIRE(cfg.ok());
    PredictorOptions o;
    REQUIRE(LoadPredictorOptions(cfg.value(), "predictor", &o).ok());
    CHECK(o.latency == "quantile");
    CHECK(o.health.threshold == def.health.threshold);
  }
  {
    auto cfg = Config::Parse(
        "[predictor]\nlatency = \"regression\"\nmin_samples = 9\n"
        "[predictor.health]\nfail_slow_factor = 2.0\nconfirm_min = 4\n"
        "[predictor.straggler]\nfactor = 3\nuse_speed = false\n");
    REQUIRE(cfg.ok());
    PredictorOptions o;
    Status st = LoadPredictorOptions(cfg.value(), "predictor", &o);
    REQUIRE(st.ok());
    CHECK(o.latency == "regression");
    CHECK(o.min_samples == 9);
    CHECK(o.health.fail_slow_factor == 2.0);
    CHECK(o.health.confirm_min == 4);
    CHECK(o.straggler.factor == 3.0);  // int accepted for double
    CHECK_FALSE(o.straggler.use_speed);
    CHECK(o.health.margin == def.health.margin);
    CHECK(cfg.value().CheckAllUsed().ok());
  }
  {
    auto cfg = Config::Parse("[p]\nlatency = \"oracle\"\n");
    PredictorOptions o;
    Status st = LoadPredictorOptions(cfg.value(), "p", &o);
    CHECK_FALSE(st.ok());
    CHECK(st.message().find("latency") != std::string::npos);
  }
  {
    auto cfg = Config::Parse("[p.health]\nthreshold = \"high\"\n");
    PredictorOptions o;
    CHECK_FALSE(LoadPredictorOptions(cfg.value(), "p", &o).ok());
  }
  {
    auto cfg = Config::Parse("[p.health]\nfail_slow_factor = 0.5\n");
    PredictorOptions o;
    Status st = LoadPredictorOptions(cfg.value(), "p", &o);
    CHECK_FALSE(st.ok());
    CHECK(st.message().find("health.fail_slow_factor") != std::string::npos);
  }
  {
    auto cfg = Config::Parse("[p.speed]\nmin_samples = -1\n");
    PredictorOptions o;
    CHECK_FALSE(LoadPredictorOptions(cfg.value(), "p", &o).ok());
  }
}

namespace {

AttemptRecord Rec(ExecutorId e, double t0, double run_s, double input = 1.0) {
  AttemptRecord r;
  r.task_class = "k";
  r.executor = e;
  r.started = t0;
  r.finished = t0 + run_s;
  r.run_s = run_s;
  r.input_size = input;
  r.outcome = AttemptOutcome::kCommitted;
  return r;
}

}  // namespace

TEST_CASE("PredictorSuite: speed factor, executor-scaled predictions, transitions", "[predictors][suite]") {
  for (std::string kind : {"quantile", "regression"}) {
    DYNAMIC_SECTION(kind) {
      PredictorOptions o;
      o.latency = kind;
      PredictorSuite s(o);
      CHECK(s.latency().name() == kind);
      std::mt19937_64 rng(21);
      std::normal_distribution<double> z(0, 0.2);
      double t = 0;
      for (int i = 0; i < 800; ++i) {
        ExecutorId e = 1 + i % 4;
        double f = e == 4 ? 2.0 : 1.0;  // executor 4 is natively 2x slower... from the start
        s.Observe(Rec(e, t, f * std::exp(z(rng))));
        t += 0.25;
      }
      CHECK(s.SpeedFactor(1) == Approx(1.0).epsilon(0.2));
      CHECK(s.SpeedFactor(4) == Approx(2.0).epsilon(0.2));
      CHECK(s.SpeedFactor(99) == 1.0);
      LatencyEstimate typical = s.Predict("k", 1.0, 0);
      LatencyEstimate on4 = s.Predict("k", 1.0, 4);
      REQUIRE(typical.known());
      CHECK(on4.median / typical.median == Approx(s.SpeedFactor(4)));

      auto tr = s.HealthTransitions();
      REQUIRE_FALSE(tr.empty());
      bool saw4 = false;
      for (auto& [e, st] : tr) {
        CHECK(e == 4);  // only the slow executor changes state
        if (st.state == NodeHealth::kFailSlow) saw4 = true;
      }
      CHECK(saw4);
      CHECK(s.Health(4).state == NodeHealth::kFailSlow);
      CHECK(s.HealthTransitions().empty());  // drained

      // exclude_fail_slow: executor 4's 2x runs no longer shift the model.
      const double before = s.Predict("k", 1.0, 0).median;
      for (int i = 0; i < 200; ++i) s.Observe(Rec(4, t += 1, 2.0));
      CHECK(s.Predict("k", 1.0, 0).median == Approx(before).epsilon(0.03));

      RunningAttempt ra;
      ra.executor = 4;
      ra.task_class = "k";
      ra.input_size = 1.0;
      ra.elapsed = 1.2;
      RunningAttempt ra1 = ra;
      ra1.executor = 1;
      CHECK(s.Assess(ra).p_straggler > s.Assess(ra1).p_straggler);

      s.ForgetExecutor(4);
      CHECK(s.Health(4).state == NodeHealth::kHealthy);
      CHECK(s.SpeedFactor(4) == 1.0);
      auto tr2 = s.HealthTransitions();
      REQUIRE(tr2.size() == 1);
      CHECK(tr2[0].second.state == NodeHealth::kHealthy);
    }
  }
}

TEST_CASE("PredictorSuite: ignores non-committed attempts and unknown classes", "[predictors][suite]") {
  PredictorSuite s;
  AttemptRecord r = Rec(1, 0, 5);
  r.outcome = AttemptOutcome::kSuperseded;
  for (int i = 0; i < 10; ++i) s.Observe(r);
  CHECK_FALSE(s.Predict("k", 1, 0).known());
  RunningAttempt ra;
  ra.task_class = "zzz";
  ra.elapsed = 1e6;
  CHECK(s.Assess(ra).p_straggler == 0);
  CHECK(s.HealthTransitions().empty());
}

TEST_CASE("PredictorSuite: an invalid latency name falls back to quantile", "[predictors][suite]") {
  PredictorOptions o;
  o.latency = "bogus";
  PredictorSuite s(o);
  CHECK(s.latency().name() == "quantile");
  CHECK(MakeLatencyPredictor(o) == nullptr);
}
