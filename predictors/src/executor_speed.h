// Per-executor relative speed: EWMA of ln(run time / typical median for the
// task's features), reported as exp(EWMA) (a geometric mean, so one 8x
// straggler does not swamp it). 1.0 = typical, 2.0 = twice as slow.
#pragma once

#include <cstdint>

#include "tailcut/common/executor_map.h"
#include "tailcut/common/ids.h"
#include "tailcut/predictors/predictor.h"

namespace tailcut {

class ExecutorSpeedTracker {
 public:
  explicit ExecutorSpeedTracker(SpeedOptions o = {}) : o_(o) {}
  void Observe(ExecutorId e, double ratio);
  // 1.0 until min_samples observations.
  double Speed(ExecutorId e) const;
  uint64_t Samples(ExecutorId e) const;
  void Forget(ExecutorId e) { m_.Erase(e); }

 private:
  struct Entry {
    double log_ewma = 0;
    double speed = 1;  // exp(log_ewma), computed once per sample: Speed() is asked several times per sample
    uint64_t n = 0;
  };
  SpeedOptions o_;
  ExecutorMap<Entry> m_;
};

}  // namespace tailcut
