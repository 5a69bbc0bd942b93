// Fail-slow detection per executor: a *change* from the executor's own
// level, not a level (docs/PREDICTORS.md has the rule and the reasons).
//
//  own level b: unknown for the first `warmup` tasks outside FAIL_SLOW (the
//     reference is then healthy_spread x the fleet's), then their median,
//     then a running mean / EWMA while healthy; noise s = 1.4826 x MAD
//  bar = max(ref + ln fail_slow_factor, ln(1 + margin)), r = bar - ref
//  HEALTHY/RECOVERED --suspect-CUSUM of clip(v - b) - drift > threshold--> SUSPECT
//  any but FAIL_SLOW --confirming CUSUM of clip(v - ref, top) - r past
//     max((confirm_stragglers + 1/4)(top - r), confirm_threshold s^2 / 2r),
//     >= confirm_min samples in its run, their validate_quantile >= bar--> FAIL_SLOW
//  SUSPECT --CUSUM back to 0, or `window` tasks below the bar (new own level)--> HEALTHY
//  FAIL_SLOW --median of last recover_window samples below
//              max(b + ln recover_factor, ln(1+margin))--> RECOVERED
//  RECOVERED --recovered_hold_s without a new alarm (checked on Observe)--> HEALTHY
//
// Memory per executor: a ring of `window` floats plus a few scalars.
#pragma once

#include <cstdint>
#include <vector>

#include "tailcut/common/executor_map.h"
#include "tailcut/predictors/predictor.h"

namespace tailcut {

class CusumHealthDetector final : public NodeHealthDetector {
 public:
  explicit CusumHealthDetector(HealthOptions o = {});
  void Observe(ExecutorId executor, double slowdown_ratio, Time now) override;
  NodeHealthState State(ExecutorId executor) const override;
  void Forget(ExecutorId executor) override { m_.Erase(executor); }

  // For tests and diagnostics.
  double Cusum(ExecutorId e) const;
  double Baseline(ExecutorId e) const;

 private:
  struct Exec {
    NodeHealthState st;
    double cusum = 0;
    uint32_t run = 0;        // samples since the CUSUM last left 0
    double scale = 0;        // robust sigma of the log ratios (set with the baseline)
    uint32_t since_scale = 0;  // healthy samples since the scale was refreshed
    double cusum2 = 0;       // the confirming CUSUM (log-likelihood units)
    uint32_t run2 = 0;
    uint32_t in_state = 0;   // samples since the last transition
    double baseline = 0;     // own healthy log level (0 = the fleet's until learned)
    uint64_t baseline_n = 0; // samples behind it; 0 = not learned yet
    uint32_t warm = 0;       // samples outside FAIL_SLOW while not learned
    double fast = 0;         // fast EWMA of the log ratio
    double level = 0;        // log level while suspect / fail-slow
    uint64_t n = 0;
    std::vector<float> ring;
    uint32_t head = 0, size = 0;
  };
  void Push(Exec& x, float v) const;
  double QuantileOfLast(const Exec& x, uint32_t k, double q) const;
  double ScaleOfLast(const Exec& x, uint64_t k, double center) const;
  // Noise floor (log units) so near-deterministic run times do not make
  // every tiny shift decisive; the scale used before 3 samples exist.
  static constexpr double kMinScale = 0.05, kDefaultScale = 0.3;
  // The confirming CUSUM clips a sample at max(2r, this x the node's noise):
  // on noisy nodes a big slowdown still counts for more than a small one.
  static constexpr double kHuberSigmas = 2.0;
  double MedianOfLast(const Exec& x, uint32_t k) const { return QuantileOfLast(x, k, 0.5); }
  HealthOptions o_;
  double drift_;
  ExecutorMap<Exec> m_;
};

}  // namespace tailcut
