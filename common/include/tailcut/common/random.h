// Seeded randomness identical on every standard library: the simulator's
// draws, the live benchmark's arrivals and the executor's `sleep` kernel.
//
// std::mt19937_64 is fully specified by the C++ standard, but the std::
// distributions are not, so every draw here is our own code on top of raw
// 64-bit outputs. Counter-based draws (Mix, SplitMix64's finaliser) give
// "common random numbers": the same (job, task, attempt) gets the same
// service time under every policy in the simulator.
#pragma once

#include <cstdint>
#include <random>

namespace tailcut {

// SplitMix64 finaliser: a good 64-bit mix of a counter.
uint64_t Mix(uint64_t x);
// Uniform in [0, 1) with 53 random bits.
inline double ToUnit(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }
// Exp(1) from a uniform u in [0, 1): -log(1 - u), never infinite.
double UnitExp(double u);
// N(0, 1) from two uniforms in [0, 1) (Box-Muller, cosine branch).
double UnitNormal(double u1, double u2);

class Rng {
 public:
  explicit Rng(uint64_t seed = 1) : gen_(seed) {}
  uint64_t Bits() { return gen_(); }
  double Uniform() { return ToUnit(gen_()); }  // [0, 1)
  double Exp(double mean);                      // mean * Exp(1)
  double Normal();                              // N(0, 1), Box-Muller
  uint64_t Below(uint64_t n);                   // uniform in [0, n)

 private:
  std::mt19937_64 gen_;
};

}  // namespace tailcut
