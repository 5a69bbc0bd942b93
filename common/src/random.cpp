#include "tailcut/common/random.h"

#include <cmath>

namespace tailcut {

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

namespace {
constexpr double kTwoPi = 6.283185307179586476925286766559;
}  // namespace

double UnitExp(double u) { return -std::log1p(-u); }
double UnitNormal(double u1, double u2) { return std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(kTwoPi * u2); }

double Rng::Exp(double mean) { return mean * UnitExp(Uniform()); }
double Rng::Normal() {
  double u1 = Uniform();
  return UnitNormal(u1, Uniform());
}
uint64_t Rng::Below(uint64_t n) {
  if (n <= 1) return 0;
  // Rejection keeps it exactly uniform.
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = gen_(); while (x >= limit);
  return x % n;
}

}  // namespace tailcut
