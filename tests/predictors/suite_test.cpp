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
    CHECK(o.latency == "regression");  // the default: it holds with skewed inputs (docs/PREDICTORS.md)
    CHECK(o.health.threshold == def.health.threshold);
  }
  {
    auto cfg = Config::Parse(
        "[predictor]\nlatency = \"regression\"\nmin_samples = 9\n"
        "[predictor.health]\nfail_slow_factor = 2.0\nconfirm_min = 4\nmin_time_s = 0.002\n"
        "[predictor.straggler]\nfactor = 3\nuse_speed = false\n");
    REQUIRE(cfg.ok());
    PredictorOptions o;
    Status st = LoadPredictorOptions(cfg.value(), "predictor", &o);
    REQUIRE(st.ok());
    CHECK(o.latency == "regression");
    CHECK(o.min_samples == 9);
    CHECK(o.health.fail_slow_factor == 2.0);
    CHECK(o.health.confirm_min == 4);
    CHECK(o.health.min_time_s == 0.002);
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
    CHECK(st.message().find("unknown predictor 'oracle'") != std::string::npos);
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
    auto cfg = Config::Parse("[p.health]\nmin_time_s = -0.001\n");
    PredictorOptions o;
    Status st = LoadPredictorOptions(cfg.value(), "p", &o);
    CHECK_FALSE(st.ok());
    CHECK(st.message().find("health.min_time_s") != std::string::npos);
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
        // Executor 4 is 3x slower from its first task: beyond healthy_spread x
        // fail_slow_factor (1.875x), so it is flagged without a change.
        double f = e == 4 ? 3.0 : 1.0;
        s.Observe(Rec(e, t, f * std::exp(z(rng))));
        t += 0.25;
      }
      CHECK(s.SpeedFactor(1) == Approx(1.0).epsilon(0.2));
      CHECK(s.SpeedFactor(4) == Approx(3.0).epsilon(0.2));
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

      // exclude_fail_slow: executor 4's 3x runs no longer shift the model.
      const double before = s.Predict("k", 1.0, 0).median;
      for (int i = 0; i < 200; ++i) s.Observe(Rec(4, t += 1, 3.0));
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

TEST_CASE("An unknown predictor name is an error, not a fallback", "[predictors][suite][factory]") {
  PredictorOptions o;
  o.latency = "bogus";
  const std::string want = "unknown predictor 'bogus' (known: quantile, regression)";
  auto p = MakeLatencyPredictor(o);
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == Status::Code::kInvalidArgument);
  CHECK(p.status().message() == want);
  CHECK(ValidatePredictorOptions(o).message() == want);
  auto suite = PredictorSuite::Create(o);
  REQUIRE_FALSE(suite.ok());
  CHECK(suite.status().message() == want);
  // At config-load time.
  auto cfg = Config::Parse("[predictor]\nlatency = \"bogus\"\n");
  REQUIRE(cfg.ok());
  PredictorOptions loaded;
  Status st = LoadPredictorOptions(cfg.value(), "predictor", &loaded);
  CHECK(st.code() == Status::Code::kInvalidArgument);
  CHECK(st.message() == want);
  // Known names still build.
  for (const char* name : {"quantile", "regression"}) {
    o.latency = name;
    auto ok = MakeLatencyPredictor(o);
    REQUIRE(ok.ok());
    CHECK((*ok)->name() == name);
  }
}

TEST_CASE("MakeHealthDetector: cusum by name, an unknown name is an error", "[predictors][health][factory]") {
  HealthOptions h;
  auto d = MakeHealthDetector(h);
  REQUIRE(d.ok());
  CHECK((*d)->State(1).state == NodeHealth::kHealthy);
  h.detector = "oracle";
  auto bad = MakeHealthDetector(h);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == Status::Code::kInvalidArgument);
  CHECK(bad.status().message() == "unknown health detector 'oracle' (known: cusum)");
  auto cfg = Config::Parse("[predictor.health]\ndetector = \"oracle\"\n");
  REQUIRE(cfg.ok());
  PredictorOptions o;
  Status st = LoadPredictorOptions(cfg.value(), "predictor", &o);
  CHECK(st.code() == Status::Code::kInvalidArgument);
  CHECK(st.message() == "unknown health detector 'oracle' (known: cusum)");
}

TEST_CASE("configs/predictors.toml: every key is known and every value is the default", "[predictors][options]") {
  auto cfg = Config::LoadFile(std::string(TAILCUT_SOURCE_DIR) + "/configs/predictors.toml");
  REQUIRE(cfg.ok());
  PredictorOptions o;
  o.latency = "quantile";  // must be overwritten by the file
  o.health.threshold = 99;
  o.health.confirm_threshold = 99;
  REQUIRE(LoadPredictorOptions(cfg.value(), "predictor", &o).ok());
  CHECK(cfg.value().CheckAllUsed().ok());
  PredictorOptions d;
  CHECK(o.latency == d.latency);
  CHECK(o.health.detector == d.health.detector);
  CHECK(o.min_samples == d.min_samples);
  CHECK(o.exclude_fail_slow == d.exclude_fail_slow);
  CHECK(o.sketch.bin_width == d.sketch.bin_width);
  CHECK(o.sketch.max_bins == d.sketch.max_bins);
  CHECK(o.regression.forget == d.regression.forget);
  CHECK(o.regression.huber_k == d.regression.huber_k);
  CHECK(o.regression.min_samples == d.regression.min_samples);
  CHECK(o.straggler.factor == d.straggler.factor);
  CHECK(o.straggler.sigmas == d.straggler.sigmas);
  CHECK(o.straggler.progress_sigma == d.straggler.progress_sigma);
  CHECK(o.straggler.min_progress == d.straggler.min_progress);
  CHECK(o.straggler.use_speed == d.straggler.use_speed);
  CHECK(o.speed.alpha == d.speed.alpha);
  CHECK(o.speed.min_samples == d.speed.min_samples);
  CHECK(o.health.fail_slow_factor == d.health.fail_slow_factor);
  CHECK(o.health.margin == d.health.margin);
  CHECK(o.health.drift == d.health.drift);
  CHECK(o.health.threshold == d.health.threshold);
  CHECK(o.health.clip == d.health.clip);
  CHECK(o.health.confirm_min == d.health.confirm_min);
  CHECK(o.health.validate_quantile == d.health.validate_quantile);
  CHECK(o.health.window == d.health.window);
  CHECK(o.health.recover_factor == d.health.recover_factor);
  CHECK(o.health.recover_window == d.health.recover_window);
  CHECK(o.health.recovered_hold_s == d.health.recovered_hold_s);
  CHECK(o.health.baseline_alpha == d.health.baseline_alpha);
  CHECK(o.health.confirm_threshold == d.health.confirm_threshold);
  CHECK(o.health.confirm_stragglers == d.health.confirm_stragglers);
  CHECK(o.health.warmup == d.health.warmup);
  CHECK(o.health.healthy_spread == d.health.healthy_spread);
}

TEST_CASE("PredictorSuite: a GPU-throttled executor is suspect until the throttle clears", "[predictors][suite][gpu]") {
  PredictorSuite s;
  // A fake heartbeat sequence of NVML clock-event reasons for executor 7:
  // none, GPU idle (benign), software power cap, power cap + hardware
  // thermal slowdown, none again. Executor 8 is never throttled.
  struct Beat {
    double t;
    uint32_t reasons;
    NodeHealth want;
  };
  const Beat beats[] = {{0, 0x0, NodeHealth::kHealthy},   {1, 0x1, NodeHealth::kHealthy},
                        {2, 0x4, NodeHealth::kSuspect},   {3, 0x4 | 0x40, NodeHealth::kSuspect},
                        {4, 0x0, NodeHealth::kHealthy},   {5, 0x3, NodeHealth::kHealthy}};
  for (const Beat& b : beats) {
    s.NoteGpuThrottle(7, b.reasons, b.t);
    s.NoteGpuThrottle(8, 0, b.t);
    INFO("t = " << b.t);
    CHECK(s.Health(7).state == b.want);
    CHECK(s.GpuThrottled(7) == (b.want == NodeHealth::kSuspect));
    CHECK(s.Health(8).state == NodeHealth::kHealthy);
  }
  // Suspect since the first throttled beat (a change of reasons does not reset it).
  s.NoteGpuThrottle(7, 0x20, 10);
  s.NoteGpuThrottle(7, 0x40, 11);
  CHECK(s.Health(7).since == 10);
  // Suspect and healthy again for the first episode, suspect for the
  // second; nothing for executor 8.
  auto tr = s.HealthTransitions();
  REQUIRE(tr.size() == 3);
  for (auto& [e, st] : tr) CHECK(e == 7);
  CHECK(tr[0].second.state == NodeHealth::kSuspect);
  CHECK(tr[1].second.state == NodeHealth::kHealthy);
  CHECK(tr[2].second.state == NodeHealth::kSuspect);
  // A forgotten executor is no longer throttled.
  s.ForgetExecutor(7);
  CHECK_FALSE(s.GpuThrottled(7));
  CHECK(s.Health(7).state == NodeHealth::kHealthy);
}

TEST_CASE("PredictorSuite: throttling does not mask a confirmed fail-slow executor", "[predictors][suite][gpu]") {
  PredictorSuite s;
  double t = 0;
  for (int i = 0; i < 400; ++i) {
    ExecutorId e = 1 + i % 4;
    s.Observe(Rec(e, t, e == 4 ? 3.0 : 1.0));
    t += 0.25;
  }
  REQUIRE(s.Health(4).state == NodeHealth::kFailSlow);
  s.NoteGpuThrottle(4, 0x4, t);
  CHECK(s.Health(4).state == NodeHealth::kFailSlow);
  s.NoteGpuThrottle(4, 0, t + 1);
  CHECK(s.Health(4).state == NodeHealth::kFailSlow);
}

// An executor whose attempts are always restarted never commits: without
// the restarts as censored evidence it would never be seen as slow.
TEST_CASE("PredictorSuite: unfinished attempts are evidence of slowness, never of speed", "[predictors][suite]") {
  PredictorSuite s;
  double t = 0;
  for (int i = 0; i < 60; ++i) {  // executors 1-3 commit ~1 s tasks: the class median
    s.Observe(Rec(1 + i % 3, t, 0.9 + 0.1 * (i % 3)));
    t += 0.25;
  }
  RunningAttempt a;
  a.task_class = "k";
  a.input_size = 1.0;
  a.executor = 4;
  a.elapsed = 0.5;  // below typical: says nothing, learns nothing
  s.ObserveUnfinished(a, t);
  CHECK(s.SpeedFactor(4) == 1.0);
  a.elapsed = 4.0;  // restarted at 4x typical, over and over
  for (int i = 0; i < 40; ++i) s.ObserveUnfinished(a, t += 1);
  CHECK(s.SpeedFactor(4) >= 3.0);
  CHECK(s.Health(4).state == NodeHealth::kFailSlow);
  CHECK(s.Health(1).state == NodeHealth::kHealthy);
  // A lower bound under what is already known of it says nothing: it must
  // not pull the estimate down to the ages at which its attempts were cut.
  const double known = s.SpeedFactor(4);
  a.elapsed = 2.0;
  for (int i = 0; i < 40; ++i) s.ObserveUnfinished(a, t += 1);
  CHECK(s.SpeedFactor(4) == known);
  CHECK(s.Health(4).state == NodeHealth::kFailSlow);
  a.elapsed = std::nan("");  // a bad clock reading is ignored
  a.executor = 5;
  s.ObserveUnfinished(a, t);
  CHECK(s.SpeedFactor(5) == 1.0);
}
