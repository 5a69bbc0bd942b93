// Fail-slow detection per executor: one-sided CUSUM on the clipped log
// slowdown ratio relative to the executor's own healthy baseline, with a
// FALCON-style validation step before anything is declared.
//
//  HEALTHY/RECOVERED --CUSUM > threshold--> SUSPECT
//  SUSPECT --validate_quantile (default 0.25: robust to random stragglers)
//            of the post-change samples >= ln(fail_slow_factor) and
//            >= baseline + ln(1+margin), with >= confirm_min samples--> FAIL_SLOW
//  SUSPECT --CUSUM back to 0--> HEALTHY
//  FAIL_SLOW --median of last recover_window samples below
//              max(ln recover_factor, baseline + ln(1+margin))--> RECOVERED
//  RECOVERED --recovered_hold_s without a new alarm (checked on Observe)--> HEALTHY
//
// Memory per executor: a ring of `window` floats plus a few scalars.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tailcut/predictors/predictor.h"

namespace tailcut {

class CusumHealthDetector final : public NodeHealthDetector {
 public:
  explicit CusumHealthDetector(HealthOptions o = {});
  void Observe(ExecutorId executor, double slowdown_ratio, Time now) override;
  NodeHealthState State(ExecutorId executor) const override;
  void Forget(ExecutorId executor) override { m_.erase(executor); }

  // For tests and diagnostics.
  double Cusum(ExecutorId e) const;
  double Baseline(ExecutorId e) const;

 private:
  struct Exec {
    NodeHealthState st;
    double cusum = 0;
    uint32_t run = 0;        // samples since the CUSUM last left 0
    uint32_t in_state = 0;   // samples since the last transition
    double baseline = 0;     // healthy log level
    double fast = 0;         // fast EWMA of the log ratio
    double level = 0;        // log level while suspect / fail-slow
    uint64_t n = 0;
    std::vector<float> ring;
    uint32_t head = 0, size = 0;
  };
  void Push(Exec& x, float v) const;
  double QuantileOfLast(const Exec& x, uint32_t k, double q) const;
  double MedianOfLast(const Exec& x, uint32_t k) const { return QuantileOfLast(x, k, 0.5); }
  HealthOptions o_;
  double drift_;
  std::unordered_map<ExecutorId, Exec> m_;
};

}  // namespace tailcut
