// Portable fixed-seed standard normal samples (std::normal_distribution is
// implementation-defined, so codes built from it would differ between
// standard libraries). Private to the coding library.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>

namespace tailcut::coding::internal {

class Gaussian {
 public:
  explicit Gaussian(std::uint64_t seed) : rng_(seed) {}
  double operator()() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    // Box-Muller on two uniforms in (0, 1]; 53-bit mantissas from the
    // (fully specified) mt19937_64 output.
    const double u1 = (static_cast<double>(rng_() >> 11) + 1.0) * 0x1.0p-53;
    const double u2 = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double th = 2.0 * std::numbers::pi * u2;
    spare_ = r * std::sin(th);
    has_spare_ = true;
    return r * std::cos(th);
  }

 private:
  std::mt19937_64 rng_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace tailcut::coding::internal
