#include <catch2/catch.hpp>

#include <cmath>

#include "tailcut/common/random.h"
#include "tailcut/common/stats.h"

using namespace tailcut;

TEST_CASE("quantiles are nearest-rank") {
  std::vector<double> v;
  for (int i = 1; i <= 1000; ++i) v.push_back(i);
  CHECK(Quantile(v, 0.5) == 500);
  CHECK(Quantile(v, 0.99) == 990);
  CHECK(Quantile(v, 0.999) == 999);
  CHECK(Quantile(v, 1.0) == 1000);
  CHECK(Quantile(v, 0.0) == 1);
  CHECK(Quantile({}, 0.5) == 0);
}

TEST_CASE("QuantileOf sorts a copy, and Mean") {
  std::vector<double> v = {5, 1, 4, 2, 3};
  CHECK(QuantileOf(v, 0.5) == 3);
  CHECK(QuantileOf(v, 0.2) == 1);  // ceil(0.2 * 5) = 1st smallest
  CHECK(QuantileOf(v, 0.21) == 2);
  CHECK(v[0] == 5);  // untouched
  CHECK(Mean(v) == 3);
  CHECK(Mean({}) == 0);
}

namespace {
std::vector<double> ExpSample(uint64_t seed, size_t n, double mean = 1) {
  tailcut::Rng rng(seed);
  std::vector<double> v(n);
  for (double& x : v) x = rng.Exp(mean);
  return v;
}
}  // namespace

TEST_CASE("the bootstrap interval of a quantile holds its estimate, is seeded, and covers the truth ~95% of the time") {
  std::vector<double> v = ExpSample(7, 400);
  Interval a = BootstrapQuantile(v, 0.5), b = BootstrapQuantile(v, 0.5);
  CHECK(a.lo == b.lo);
  CHECK(a.hi == b.hi);
  CHECK(a.lo <= QuantileOf(v, 0.5));
  CHECK(QuantileOf(v, 0.5) <= a.hi);
  CHECK(a.lo < a.hi);
  // Exp(1)'s median is ln 2: over 100 independent samples of 200, the 95%
  // interval misses it about 5 times (binomial: 85..100 covers it).
  int covered = 0;
  BootstrapOptions o;
  o.resamples = 400;
  for (uint64_t s = 1; s <= 100; ++s) {
    Interval i = BootstrapQuantile(ExpSample(1000 + s, 200), 0.5, o);
    covered += i.lo <= std::log(2.0) && std::log(2.0) <= i.hi;
  }
  CHECK(covered >= 85);
  CHECK(covered < 100);  // an interval that always covers is too wide to tell anything
  CHECK(BootstrapQuantile({}, 0.5).hi == 0);
}

TEST_CASE("the bootstrap interval of a ratio of quantiles tells a real difference from none") {
  std::vector<double> a = ExpSample(11, 1000), same = ExpSample(12, 1000), half = ExpSample(13, 1000, 0.5);
  Interval r = BootstrapQuantileRatio(same, a, 0.99);
  CHECK(r.lo < 1);
  CHECK(r.hi > 1);
  Interval h = BootstrapQuantileRatio(half, a, 0.99);
  CHECK(h.Below(1));
  CHECK(h.lo > 0.3);
  CHECK(h.hi < 0.75);
}
