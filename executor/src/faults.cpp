#include "tailcut/executor/faults.h"

namespace tailcut::executor {

FaultInjector::FaultInjector(FaultOptions options) : options_(options), rng_(options.seed) {}

double FaultInjector::TimeFactorAt(double elapsed_s) const {
  double f = options_.slowdown;
  if (options_.fail_slow_factor != 1.0 && elapsed_s >= options_.fail_slow_after_s) f *= options_.fail_slow_factor;
  return f;
}

double FaultInjector::DrawExtraDelayMs() {
  if (options_.delay_prob <= 0 || options_.delay_ms <= 0) return 0;
  MutexLock lock(mu_);
  // Compare a 53-bit uniform draw rather than std::uniform_real_distribution,
  // whose output is not specified identically across standard libraries.
  double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  return u < options_.delay_prob ? options_.delay_ms : 0;
}

}  // namespace tailcut::executor
