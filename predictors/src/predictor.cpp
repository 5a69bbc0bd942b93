#include "tailcut/predictors/predictor.h"

#include <algorithm>
#include <cmath>

#include "tailcut/common/log.h"

#include "executor_speed.h"
#include "health_detector.h"
#include "quantile_predictor.h"
#include "quantile_sketch.h"
#include "regression_predictor.h"
#include "tailcut/predictors/straggler.h"

namespace tailcut {

const char* NodeHealthName(NodeHealth h) {
  switch (h) {
    case NodeHealth::kHealthy: return "healthy";
    case NodeHealth::kSuspect: return "suspect";
    case NodeHealth::kFailSlow: return "fail_slow";
    case NodeHealth::kRecovered: return "recovered";
  }
  return "unknown";
}

namespace {

Status Bad(std::string_view key, std::string_view why) {
  return Status::InvalidArgument("predictor option " + std::string(key) + ": " + std::string(why));
}

// The one list of each: a new predictor or detector is one line here (and
// its file pair); the names in errors come from the same table.
template <typename T, typename Options>
struct Named {
  std::string_view name;
  std::unique_ptr<T> (*make)(const Options&);
};
template <typename T, typename Impl, typename Options>
std::unique_ptr<T> Make(const Options& o) {
  return std::make_unique<Impl>(o);
}
constexpr Named<LatencyPredictor, PredictorOptions> kLatencyPredictors[] = {
    {"quantile", Make<LatencyPredictor, QuantilePredictor, PredictorOptions>},
    {"regression", Make<LatencyPredictor, RegressionPredictor, PredictorOptions>},
};
constexpr Named<NodeHealthDetector, HealthOptions> kHealthDetectors[] = {
    {"cusum", Make<NodeHealthDetector, CusumHealthDetector, HealthOptions>},
};

// The entry called `name`, or "unknown <what> 'name' (known: a, b)".
template <typename T, typename Options, size_t N>
StatusOr<const Named<T, Options>*> Find(std::string_view what, const std::string& name,
                                         const Named<T, Options> (&known)[N]) {
  std::string list;
  for (const auto& k : known) {
    if (k.name == name) return &k;
    list += (list.empty() ? "" : ", ") + std::string(k.name);
  }
  return Status::InvalidArgument("unknown " + std::string(what) + " '" + name + "' (known: " + list + ")");
}

}  // namespace

Status ValidatePredictorOptions(const PredictorOptions& o) {
  if (auto f = Find("predictor", o.latency, kLatencyPredictors); !f.ok()) return f.status();
  if (auto f = Find("health detector", o.health.detector, kHealthDetectors); !f.ok()) return f.status();
  if (o.min_samples < 1) return Bad("min_samples", "must be >= 1");
  if (o.max_classes < 1 || o.max_classes > (1u << 20)) return Bad("max_classes", "must be in [1, 1048576]");
  if (!(o.sketch.bin_width > 0 && o.sketch.bin_width <= 1)) return Bad("sketch.bin_width", "must be in (0, 1]");
  if (o.sketch.max_bins < 16) return Bad("sketch.max_bins", "must be >= 16");
  if (!(o.regression.forget > 0 && o.regression.forget <= 1)) return Bad("regression.forget", "must be in (0, 1]");
  if (o.regression.huber_k < 0) return Bad("regression.huber_k", "must be >= 0 (0 disables)");
  if (o.regression.min_samples < 2) return Bad("regression.min_samples", "must be >= 2");
  if (!(o.straggler.factor >= 1)) return Bad("straggler.factor", "must be >= 1");
  if (o.straggler.sigmas < 0) return Bad("straggler.sigmas", "must be >= 0");
  if (!(o.straggler.progress_sigma > 0)) return Bad("straggler.progress_sigma", "must be > 0");
  if (!(o.straggler.min_progress > 0 && o.straggler.min_progress < 1)) return Bad("straggler.min_progress", "must be in (0, 1)");
  if (!(o.speed.alpha > 0 && o.speed.alpha <= 1)) return Bad("speed.alpha", "must be in (0, 1]");
  const HealthOptions& h = o.health;
  if (!(h.fail_slow_factor > 1)) return Bad("health.fail_slow_factor", "must be > 1");
  if (h.margin < 0) return Bad("health.margin", "must be >= 0");
  if (h.drift < 0) return Bad("health.drift", "must be >= 0 (0 = automatic)");
  if (!(h.threshold > 0)) return Bad("health.threshold", "must be > 0");
  if (!(h.clip >= 0)) return Bad("health.clip", "must be >= 0 (0 = automatic)");
  if (h.confirm_min < 1) return Bad("health.confirm_min", "must be >= 1");
  if (h.confirm_threshold < 0) return Bad("health.confirm_threshold", "must be >= 0");
  if (h.confirm_stragglers < 0) return Bad("health.confirm_stragglers", "must be >= 0");
  if (!(h.validate_quantile >= 0 && h.validate_quantile <= 1)) return Bad("health.validate_quantile", "must be in [0, 1]");
  if (h.window < 1 || h.window > 1024) return Bad("health.window", "must be in [1, 1024]");
  if (h.recover_window < 1) return Bad("health.recover_window", "must be >= 1");
  if (!(h.recover_factor >= 1)) return Bad("health.recover_factor", "must be >= 1");
  if (h.recovered_hold_s < 0) return Bad("health.recovered_hold_s", "must be >= 0");
  if (!(h.baseline_alpha >= 0 && h.baseline_alpha <= 1)) return Bad("health.baseline_alpha", "must be in [0, 1]");
  if (h.warmup < 1 || h.warmup > 1024) return Bad("health.warmup", "must be in [1, 1024]");
  if (!(h.healthy_spread >= 1)) return Bad("health.healthy_spread", "must be >= 1");
  if (!(h.min_time_s >= 0) || !std::isfinite(h.min_time_s)) return Bad("health.min_time_s", "must be >= 0");
  return Status::Ok();
}

Status LoadPredictorOptions(const Config& cfg, std::string_view prefix, PredictorOptions* out) {
  TableReader r(cfg, prefix);
  PredictorOptions& o = *out;
  r.Get("latency", &o.latency)
      .Get("min_samples", &o.min_samples)
      .Get("exclude_fail_slow", &o.exclude_fail_slow)
      .Get("max_classes", &o.max_classes)
      .Get("sketch.bin_width", &o.sketch.bin_width)
      .Get("sketch.max_bins", &o.sketch.max_bins)
      .Get("regression.forget", &o.regression.forget)
      .Get("regression.huber_k", &o.regression.huber_k)
      .Get("regression.min_samples", &o.regression.min_samples)
      .Get("straggler.factor", &o.straggler.factor)
      .Get("straggler.sigmas", &o.straggler.sigmas)
      .Get("straggler.progress_sigma", &o.straggler.progress_sigma)
      .Get("straggler.min_progress", &o.straggler.min_progress)
      .Get("straggler.use_speed", &o.straggler.use_speed)
      .Get("speed.alpha", &o.speed.alpha)
      .Get("speed.min_samples", &o.speed.min_samples)
      .Get("health.detector", &o.health.detector)
      .Get("health.fail_slow_factor", &o.health.fail_slow_factor)
      .Get("health.margin", &o.health.margin)
      .Get("health.drift", &o.health.drift)
      .Get("health.threshold", &o.health.threshold)
      .Get("health.clip", &o.health.clip)
      .Get("health.confirm_min", &o.health.confirm_min)
      .Get("health.confirm_threshold", &o.health.confirm_threshold)
      .Get("health.confirm_stragglers", &o.health.confirm_stragglers)
      .Get("health.window", &o.health.window)
      .Get("health.validate_quantile", &o.health.validate_quantile)
      .Get("health.recover_factor", &o.health.recover_factor)
      .Get("health.recover_window", &o.health.recover_window)
      .Get("health.recovered_hold_s", &o.health.recovered_hold_s)
      .Get("health.baseline_alpha", &o.health.baseline_alpha)
      .Get("health.warmup", &o.health.warmup)
      .Get("health.healthy_spread", &o.health.healthy_spread)
      .Get("health.min_time_s", &o.health.min_time_s);
  if (!r.status().ok()) return r.status();
  return ValidatePredictorOptions(o);
}

StatusOr<std::unique_ptr<LatencyPredictor>> MakeLatencyPredictor(const PredictorOptions& opts) {
  auto f = Find("predictor", opts.latency, kLatencyPredictors);
  if (!f.ok()) return f.status();
  return (*f)->make(opts);
}

StatusOr<std::unique_ptr<NodeHealthDetector>> MakeHealthDetector(const HealthOptions& opts) {
  auto f = Find("health detector", opts.detector, kHealthDetectors);
  if (!f.ok()) return f.status();
  return (*f)->make(opts);
}

PredictorSuite::PredictorSuite(PredictorOptions opts) : opts_(std::move(opts)) {
  auto latency = MakeLatencyPredictor(opts_);
  if (!latency.ok()) {  // a programming error (see the header): say so, use the default
    TC_LOG(Error) << "PredictorSuite: " << latency.status().message() << "; using 'quantile'";
    opts_.latency = PredictorOptions().latency;
    latency = MakeLatencyPredictor(opts_);
  }
  latency_ = std::move(latency).value();
  auto health = MakeHealthDetector(opts_.health);
  if (!health.ok()) {
    TC_LOG(Error) << "PredictorSuite: " << health.status().message() << "; using 'cusum'";
    opts_.health.detector = HealthOptions().detector;
    health = MakeHealthDetector(opts_.health);
  }
  health_ = std::move(health).value();
  speed_ = std::make_unique<ExecutorSpeedTracker>(opts_.speed);
}

StatusOr<std::unique_ptr<PredictorSuite>> PredictorSuite::Create(PredictorOptions opts) {
  if (Status st = ValidatePredictorOptions(opts); !st.ok()) return st;
  return std::make_unique<PredictorSuite>(std::move(opts));
}

PredictorSuite::~PredictorSuite() = default;
PredictorSuite::PredictorSuite(PredictorSuite&&) noexcept = default;
PredictorSuite& PredictorSuite::operator=(PredictorSuite&&) noexcept = default;

void PredictorSuite::Observe(const AttemptRecord& r) {
  if (r.outcome != AttemptOutcome::kCommitted) return;
  const double d = r.Duration();
  if (!(d > 0)) return;
  // Ratio against the prediction made before this result is learned.
  const LogTimeDist dist = latency_->Distribution(r.task_class, r.input_size);
  if (dist.known() && r.executor != 0) {
    const double typical = std::exp(dist.offset + dist.residuals->Quantile(0.5));
    speed_->Observe(r.executor, d / typical);
    Time now = r.finished >= 0 ? r.finished : (r.started >= 0 ? r.started + d : 0);
    health_->Observe(r.executor, SlowdownRatio(d, typical, opts_.health.min_time_s), now);
    NoteHealth(r.executor);
  }
  if (opts_.exclude_fail_slow && r.executor != 0 && health_->State(r.executor).state == NodeHealth::kFailSlow) return;
  latency_->Observe(r);
  ++learned_;
}

void PredictorSuite::ObserveUnfinished(const RunningAttempt& a, Time now) {
  if (a.executor == 0 || !(a.elapsed > 0) || !std::isfinite(a.elapsed)) return;
  const LogTimeDist dist = latency_->Distribution(a.task_class, a.input_size);
  if (!dist.known()) return;
  const double typical = std::exp(dist.offset + dist.residuals->Quantile(0.5));
  const StragglerEstimate est = AssessFromDistribution(dist, a, opts_.straggler, 1.0);
  const double ratio = std::max(a.elapsed, est.expected_total) / typical;
  // A lower bound: below 1, or below what is already believed of this
  // executor, it is consistent with that and says nothing (feeding it would
  // pull a slow executor's estimate down to its attempts' cut-off ages).
  if (!std::isfinite(ratio) || !(ratio > std::max(1.0, speed_->Speed(a.executor)))) return;
  speed_->Observe(a.executor, ratio);
  health_->Observe(a.executor, SlowdownRatio(ratio * typical, typical, opts_.health.min_time_s), now);
  NoteHealth(a.executor);
}

void PredictorSuite::NoteHealth(ExecutorId e) {
  NodeHealthState s = Health(e);
  auto it = last_state_.find(e);
  NodeHealth prev = it == last_state_.end() ? NodeHealth::kHealthy : it->second;
  if (s.state != prev) transitions_.emplace_back(e, s);
  last_state_[e] = s.state;
}

LatencyEstimate PredictorSuite::Predict(std::string_view task_class, double input_size, ExecutorId executor) const {
  // The latency model ignores `executor` (LatencyPredictor::Predict).
  PredictMemo& m = memo_;
  if (m.learned != learned_ || m.input_size != input_size || m.task_class != task_class) {
    m.estimate = latency_->Predict(task_class, input_size, 0);
    m.task_class.assign(task_class);
    m.input_size = input_size;
    m.learned = learned_;
  }
  LatencyEstimate e = m.estimate;
  if (executor != 0 && e.known()) {
    const double s = speed_->Speed(executor);
    e.median *= s;
    e.p90 *= s;
    e.p99 *= s;
  }
  return e;
}

StragglerEstimate PredictorSuite::Assess(const RunningAttempt& a) const {
  const double s = a.executor != 0 ? speed_->Speed(a.executor) : 1.0;
  return AssessFromDistribution(latency_->Distribution(a.task_class, a.input_size), a, opts_.straggler, s);
}

NodeHealthState PredictorSuite::Health(ExecutorId e) const {
  NodeHealthState s = health_->State(e);
  auto t = throttled_.find(e);
  if (t != throttled_.end() && (s.state == NodeHealth::kHealthy || s.state == NodeHealth::kRecovered)) {
    s.state = NodeHealth::kSuspect;
    s.since = t->second;
  }
  return s;
}

void PredictorSuite::NoteGpuThrottle(ExecutorId e, uint32_t reasons, Time now) {
  // NVML's GpuIdle (0x1) and ApplicationsClocksSetting (0x2): not slowdowns.
  constexpr uint32_t kBenign = 0x1 | 0x2;
  const bool throttled = (reasons & ~kBenign) != 0;
  if (throttled == (throttled_.count(e) > 0)) return;
  if (throttled) {
    throttled_.emplace(e, now);
  } else {
    throttled_.erase(e);
  }
  NoteHealth(e);
}

double PredictorSuite::SpeedFactor(ExecutorId e) const { return speed_->Speed(e); }

void PredictorSuite::ForgetExecutor(ExecutorId e) {
  throttled_.erase(e);
  speed_->Forget(e);
  health_->Forget(e);
  auto it = last_state_.find(e);
  if (it != last_state_.end()) {
    if (it->second != NodeHealth::kHealthy) transitions_.emplace_back(e, NodeHealthState{});
    last_state_.erase(it);
  }
}

std::vector<std::pair<ExecutorId, NodeHealthState>> PredictorSuite::HealthTransitions() {
  std::vector<std::pair<ExecutorId, NodeHealthState>> out;
  out.swap(transitions_);
  return out;
}

}  // namespace tailcut
