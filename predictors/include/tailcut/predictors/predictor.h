// Latency predictors, straggler scoring and fail-slow node detection.
//
// The scheduler core owns one PredictorSuite. It feeds it every finished
// AttemptRecord and asks it, for running attempts, how long they will still
// take and how likely they are to be stragglers, and, for executors, whether
// they are fail-slow. See docs/PREDICTORS.md for the model and every option.
//
// Nothing here is thread-safe: the owner serialises calls (the scheduler
// core is single-threaded). Const methods may refresh internal caches.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tailcut/common/attempt_record.h"
#include "tailcut/common/clock.h"
#include "tailcut/common/config.h"
#include "tailcut/common/ids.h"
#include "tailcut/common/status.h"

namespace tailcut {

// Predicted run-time distribution of one task (seconds).
struct LatencyEstimate {
  double median = 0;
  double p90 = 0;
  double p99 = 0;
  uint64_t samples = 0;  // observations the estimate rests on; 0 = unknown
  bool known() const { return samples > 0; }
};

struct RunningAttempt {
  AttemptId attempt = 0;
  ExecutorId executor = 0;
  std::string_view task_class;
  double input_size = 0;  // 0 when unknown
  double elapsed = 0;     // seconds it has been running
  double progress = -1;   // 0..1, -1 unknown
};

struct StragglerEstimate {
  double time_left = 0;       // expected remaining seconds (0 when unknown)
  double expected_total = 0;  // elapsed + time_left
  double p_straggler = 0;     // P(total run time > straggler threshold), see docs
};

enum class NodeHealth { kHealthy, kSuspect, kFailSlow, kRecovered };
const char* NodeHealthName(NodeHealth h);  // "healthy", "suspect", "fail_slow", "recovered"

struct NodeHealthState {
  NodeHealth state = NodeHealth::kHealthy;
  double speed_factor = 1.0;  // run time / expected; 3 = 3x slower
  Time since = 0;             // when it entered `state`
};

// The run-time distribution for a set of task features, in log space:
// ln(run time) = offset + R, where R is drawn from `residuals` (a sketch of
// log-residuals). Shared by both predictors so straggler scoring is identical.
class BinnedQuantiles;
struct LogTimeDist {
  double offset = 0;
  const BinnedQuantiles* residuals = nullptr;  // null = unknown
  uint64_t samples = 0;
  bool known() const { return residuals != nullptr && samples > 0; }
};

class LatencyPredictor {
 public:
  virtual ~LatencyPredictor() = default;
  virtual std::string_view name() const = 0;
  // Learns from committed attempts with a positive Duration(); every other
  // outcome is ignored (their times are censored or meaningless).
  virtual void Observe(const AttemptRecord& r) = 0;
  // `executor` is ignored by the predictors themselves (the suite applies
  // per-executor speed); estimates are for a typical executor.
  virtual LatencyEstimate Predict(std::string_view task_class, double input_size,
                                  ExecutorId executor) const = 0;
  virtual StragglerEstimate Assess(const RunningAttempt& a) const = 0;

  // Added: the distribution behind Predict, for straggler scoring.
  virtual LogTimeDist Distribution(std::string_view task_class, double input_size) const = 0;
};

// ---- Options (all keys under "<prefix>.", defaults documented in docs/PREDICTORS.md)

struct SketchOptions {
  double bin_width = 0.01;    // log-space bin width: ~1% relative resolution
  uint32_t max_bins = 4096;   // memory cap per sketch (values beyond clamp to edge bins)
};

struct RegressionOptions {
  double forget = 1.0;        // exponential forgetting per observation (1 = none)
  double huber_k = 3.0;       // down-weight residuals beyond k robust sigmas
  uint32_t min_samples = 8;   // below: predict with the class median only
};

struct StragglerOptions {
  double factor = 1.5;           // threshold >= factor x typical median ...
  double sigmas = 3.0;           // ... and >= median x exp(sigmas x robust sigma)
  double progress_sigma = 0.25;  // log-space spread of a LATE estimate at 50% progress
  double min_progress = 0.02;    // below: progress is treated as unknown
  bool use_speed = true;         // shift the distribution by the executor's speed
};

struct SpeedOptions {
  double alpha = 0.1;         // EWMA weight of the newest log ratio
  uint32_t min_samples = 3;   // SpeedFactor() is 1.0 until then
};

struct HealthOptions {
  std::string detector = "cusum";  // the fail-slow detector, by name (MakeHealthDetector)
  double fail_slow_factor = 1.5;  // confirmed level must be >= this x the executor's own level
  double margin = 0.10;           // ... and >= (1+margin) x the fleet's typical
  double drift = 0;               // CUSUM allowance (log); 0 = ln(fail_slow_factor)/2
  double threshold = 4.0;         // CUSUM alarm level (log units)
  double clip = 0;                // |log ratio - baseline| clipped to this; 0 = 2 ln(fail_slow_factor)
  uint32_t confirm_min = 6;       // post-change samples needed to validate
  double confirm_threshold = 12;  // confirming evidence for FAIL_SLOW, log-likelihood ratio (nats) ...
  double confirm_stragglers = 5;  // ... and more than this many maximally slow samples
  double validate_quantile = 0.5;  // level of the post-change samples that must be slow
  uint32_t window = 32;           // ring of recent log ratios kept per executor
  double recover_factor = 1.2;    // FAIL_SLOW -> RECOVERED when recent median below
  uint32_t recover_window = 5;    // ... over this many latest samples
  double recovered_hold_s = 60;   // RECOVERED -> HEALTHY after this long healthy
  double baseline_alpha = 0.02;   // EWMA of the executor's healthy level
  uint32_t warmup = 16;           // samples whose median is the executor's first own level
  double healthy_spread = 1.25;   // before that, confirm only beyond this x fail_slow_factor x the fleet's
  // An absolute floor of evidence: each run time is judged as
  // max(run, min_time_s) / max(typical, min_time_s) (SlowdownRatio), so a
  // task longer than this is judged by its ratio, and one of microseconds
  // (a no-op, whose run times CPU contention and clock granularity shift
  // 2-10x) is not slow until it runs longer than this. 0 = plain ratios.
  double min_time_s = 0.0001;
};

// run_s / typical_s, each at least `floor_s` (HealthOptions::min_time_s):
// the ratio when both are above the floor, 1 when both are below it.
inline double SlowdownRatio(double run_s, double typical_s, double floor_s) {
  return std::max(run_s, floor_s) / std::max(typical_s, floor_s);
}

struct PredictorOptions {
  std::string latency = "regression";  // regression | quantile (see docs/PREDICTORS.md for why regression)
  uint32_t min_samples = 5;          // class observations before estimates are known
  bool exclude_fail_slow = true;     // do not learn latency from FAIL_SLOW executors
  // Task classes learned at once (clients name them): a new class beyond
  // this evicts the one updated least recently. Each holds up to two
  // sketches (regression; quantile one) of sketch.max_bins x 16 bytes:
  // at most 128 KiB a class with the default 4096 bins.
  uint32_t max_classes = 1024;
  SketchOptions sketch;
  RegressionOptions regression;
  StragglerOptions straggler;
  SpeedOptions speed;
  HealthOptions health;
};

// Reads "<prefix>.latency", "<prefix>.min_samples", "<prefix>.sketch.bin_width",
// ... (see docs/PREDICTORS.md); absent keys keep the values already in *out.
Status LoadPredictorOptions(const Config& cfg, std::string_view prefix, PredictorOptions* out);
Status ValidatePredictorOptions(const PredictorOptions& o);

// Factories by name. opts.latency: "quantile" or "regression"; anything
// else is InvalidArgument("unknown predictor 'x' (known: quantile,
// regression)"), the same error ValidatePredictorOptions (hence
// LoadPredictorOptions, at config-load time) gives.
StatusOr<std::unique_ptr<LatencyPredictor>> MakeLatencyPredictor(const PredictorOptions& opts);

class NodeHealthDetector {
 public:
  virtual ~NodeHealthDetector() = default;
  // slowdown_ratio = run time / predicted median for that task.
  virtual void Observe(ExecutorId executor, double slowdown_ratio, Time now) = 0;
  virtual NodeHealthState State(ExecutorId executor) const = 0;
  virtual void Forget(ExecutorId executor) = 0;
};

// opts.detector: "cusum" (one-sided CUSUM with FALCON-style validation, see
// docs/PREDICTORS.md); anything else is InvalidArgument("unknown health
// detector 'x' (known: cusum)").
StatusOr<std::unique_ptr<NodeHealthDetector>> MakeHealthDetector(const HealthOptions& opts);

class ExecutorSpeedTracker;

class PredictorSuite {
 public:
  // The options must be valid (ValidatePredictorOptions; LoadPredictorOptions
  // checks them at config-load time). An unknown predictor or detector name
  // here is a programming error: it is logged and the default is used. Use
  // Create to get it as a Status instead.
  explicit PredictorSuite(PredictorOptions opts = {});
  // InvalidArgument when ValidatePredictorOptions(opts) fails.
  static StatusOr<std::unique_ptr<PredictorSuite>> Create(PredictorOptions opts);
  ~PredictorSuite();
  PredictorSuite(PredictorSuite&&) noexcept;
  PredictorSuite& operator=(PredictorSuite&&) noexcept;

  // Updates the latency model, executor speed and health. Health time is
  // r.finished (or started + Duration() when finished is unset).
  void Observe(const AttemptRecord& r);
  // A started attempt that ended unfinished: killed to be restarted (a
  // policy judged it a straggler) or beaten by a copy elsewhere. Its run
  // time is censored, so Observe never learns from it, and an executor
  // whose attempts are always restarted or beaten would never be seen as
  // slow (and placement would keep giving it work). Feeds the speed tracker and the health detector the
  // attempt's expected total run time given how long it ran (Assess,
  // without the executor's own speed shift, so the estimate does not feed
  // on itself), as a ratio to the typical time, when that ratio is above 1:
  // evidence of slowness no larger than a commit would most likely have
  // shown. Not the latency model.
  void ObserveUnfinished(const RunningAttempt& a, Time now);
  // With executor != 0 the median/p90/p99 are scaled by SpeedFactor(executor).
  LatencyEstimate Predict(std::string_view task_class, double input_size, ExecutorId executor) const;
  StragglerEstimate Assess(const RunningAttempt& a) const;
  // The detector's state, except that an executor whose GPU clocks are
  // throttled reads SUSPECT while it would read HEALTHY or RECOVERED.
  NodeHealthState Health(ExecutorId e) const;
  double SpeedFactor(ExecutorId e) const;
  void ForgetExecutor(ExecutorId e);
  // GPU clock-throttle reasons from the executor's heartbeat (NVML
  // clocks-event bits; 0 = none). Bits that never slow work (GPU idle,
  // application clocks setting) are ignored whatever the peer sent. The
  // executor is SUSPECT from the first throttled heartbeat until one
  // without throttling (docs/PREDICTORS.md, "GPU throttling"); FAIL_SLOW
  // still needs slow run times.
  void NoteGpuThrottle(ExecutorId e, uint32_t reasons, Time now);
  bool GpuThrottled(ExecutorId e) const { return throttled_.count(e) > 0; }
  // Health changes since the last call, oldest first.
  std::vector<std::pair<ExecutorId, NodeHealthState>> HealthTransitions();

  // Added accessors.
  const PredictorOptions& options() const { return opts_; }
  const LatencyPredictor& latency() const { return *latency_; }

 private:
  void NoteHealth(ExecutorId e);
  PredictorOptions opts_;
  std::unique_ptr<LatencyPredictor> latency_;
  std::unique_ptr<ExecutorSpeedTracker> speed_;
  std::unique_ptr<NodeHealthDetector> health_;
  std::unordered_map<ExecutorId, NodeHealth> last_state_;
  std::unordered_map<ExecutorId, Time> throttled_;  // GPU-throttled executors, since when
  std::vector<std::pair<ExecutorId, NodeHealthState>> transitions_;
  // Performance: the core and the policies ask Predict several times per
  // launch for the same class (time limits, placement, the first wake-up);
  // the latency model's answer is kept until it learns again (issue 41).
  // Its answer depends only on what it learned, so this changes no result.
  struct PredictMemo {
    std::string task_class;
    double input_size = 0;
    uint64_t learned = UINT64_MAX;  // learned_ when kept
    LatencyEstimate estimate;
  };
  uint64_t learned_ = 0;  // latency_->Observe calls
  mutable PredictMemo memo_;
};

}  // namespace tailcut
