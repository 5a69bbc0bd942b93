#include "tailcut/common/clock.h"

#include <chrono>

namespace tailcut {
namespace {
int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

SteadyClock::SteadyClock() : origin_ns_(SteadyNs()) {}
Time SteadyClock::Now() const { return static_cast<double>(SteadyNs() - origin_ns_) * 1e-9; }

}  // namespace tailcut
