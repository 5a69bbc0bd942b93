// Fault injection: make this executor a straggler (or a corpse) on demand.
#pragma once

#include <cstdint>
#include <random>

#include "tailcut/common/thread_annotations.h"

namespace tailcut::executor {

struct FaultOptions {
  double slowdown = 1.0;            // every kernel takes this many times longer
  double fail_slow_after_s = 0.0;   // from this many seconds after start ...
  double fail_slow_factor = 1.0;    // ... multiply durations by this (1 = off)
  double delay_prob = 0.0;          // each attempt, with this probability ...
  double delay_ms = 0.0;            // ... gets this much extra run time
  double crash_after_s = 0.0;       // exit abruptly (137) after this; 0 = never
  uint64_t seed = 0;                // for delay_prob draws

  bool any() const {
    return slowdown != 1.0 || fail_slow_factor != 1.0 || delay_prob > 0 || crash_after_s > 0;
  }
};

// Thread-safe; one per executor.
class FaultInjector {
 public:
  explicit FaultInjector(FaultOptions options);
  const FaultOptions& options() const { return options_; }
  // Duration multiplier for an attempt starting `elapsed_s` after start.
  double TimeFactorAt(double elapsed_s) const;
  // Extra delay (ms) for the next attempt: delay_ms with probability
  // delay_prob, else 0. Deterministic sequence for a given seed.
  double DrawExtraDelayMs();
  bool CrashDue(double elapsed_s) const {
    return options_.crash_after_s > 0 && elapsed_s >= options_.crash_after_s;
  }

 private:
  FaultOptions options_;
  Mutex mu_;
  std::mt19937_64 rng_ TC_GUARDED_BY(mu_);
};

}  // namespace tailcut::executor
