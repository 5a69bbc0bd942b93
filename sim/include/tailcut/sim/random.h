// Seeded randomness for the simulator, identical on every standard library.
//
// std::mt19937_64 is fully specified by the C++ standard, but the std::
// distributions are not, so every distribution here is our own code on top
// of raw 64-bit draws. Counter-based draws (Mix) give "common random
// numbers": the same (job, task, attempt) gets the same service time under
// every policy, so policies are compared on the same luck.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "tailcut/common/config.h"
#include "tailcut/common/status.h"

namespace tailcut::sim {

// SplitMix64 finaliser: a good 64-bit mix of a counter.
uint64_t Mix(uint64_t x);
// Uniform in [0, 1) with 53 random bits.
inline double ToUnit(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

class Rng {
 public:
  explicit Rng(uint64_t seed = 1) : gen_(seed) {}
  uint64_t Bits() { return gen_(); }
  double Uniform() { return ToUnit(gen_()); }            // [0, 1)
  double Exp(double mean);                                // mean * Exp(1)
  double Normal();                                        // N(0, 1), Box-Muller
  uint64_t Below(uint64_t n);                             // uniform in [0, n)

 private:
  std::mt19937_64 gen_;
};

// A non-negative random quantity described in TOML as a table:
//   { dist = "exp", mean = 1.0, straggler_p = 0.05, straggler_factor = 5 }
// dist: constant (value) | uniform (min, max) | exp (mean) |
//       shifted_exp (shift, mean: shift + Exp(mean)) |
//       pareto (scale = x_m, alpha; mean = alpha x_m / (alpha - 1)) |
//       lognormal (median, sigma: median * exp(sigma N)).
// Straggler mixture on top of any of them: with probability straggler_p the
// value is multiplied by straggler_factor.
struct Distribution {
  enum class Kind { kConstant, kUniform, kExp, kShiftedExp, kPareto, kLognormal };
  Kind kind = Kind::kConstant;
  double value = 1.0;   // constant
  double min = 0, max = 1;  // uniform
  double mean = 1.0;    // exp, shifted_exp (of the exponential part)
  double shift = 0;     // shifted_exp
  double scale = 1.0;   // pareto x_m
  double alpha = 2.0;   // pareto shape
  double median = 1.0;  // lognormal
  double sigma = 0.5;   // lognormal
  double straggler_p = 0;
  double straggler_factor = 1;

  static Distribution Constant(double v);
  static Distribution Exponential(double mean);
  // Draws one value from two uniforms u1, u2 in [0, 1) and a third for the
  // straggler coin (counter-based callers pass Mix-ed bits).
  double Sample(Rng& rng) const;
  double SampleBits(uint64_t bits) const;  // deterministic in `bits`
  double Mean() const;
  std::string Describe() const;
};

// Reads a distribution at `key` (a table with `dist`), or a bare number
// meaning constant. Absent: leaves *out unchanged.
Status LoadDistribution(const Config& cfg, const std::string& key, Distribution* out);

}  // namespace tailcut::sim
