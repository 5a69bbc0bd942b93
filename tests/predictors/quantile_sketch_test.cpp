#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "quantile_sketch.h"

using namespace tailcut;

TEST_CASE("BinnedQuantiles: empty sketch answers zero", "[predictors][sketch]") {
  BinnedQuantiles q;
  CHECK(q.count() == 0);
  CHECK(q.Quantile(0.5) == 0);
  CHECK(q.Cdf(1.0) == 0);
  CHECK(q.SmoothedSurvival(0) == Approx(0.5));
}

TEST_CASE("BinnedQuantiles: uniform quantiles within a bin", "[predictors][sketch]") {
  BinnedQuantiles q(0.01, 4096);
  for (int i = 0; i < 10000; ++i) q.Add(i / 10000.0);  // U[0,1)
  CHECK(q.Quantile(0.5) == Approx(0.5).margin(0.011));
  CHECK(q.Quantile(0.9) == Approx(0.9).margin(0.011));
  CHECK(q.Quantile(0.99) == Approx(0.99).margin(0.011));
  CHECK(q.Cdf(0.25) == Approx(0.25).margin(0.011));
  CHECK(q.Quantile(0.0) >= 0.0);
  CHECK(q.Quantile(1.0) <= 1.0);
  CHECK(q.RobustSigma() == Approx(0.5 / 1.349).margin(0.02));
}

TEST_CASE("BinnedQuantiles: normal data, negative values, robust sigma", "[predictors][sketch]") {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> n(-1.0, 0.3);
  BinnedQuantiles q(0.01, 4096);
  for (int i = 0; i < 50000; ++i) q.Add(n(rng));
  CHECK(q.Quantile(0.5) == Approx(-1.0).margin(0.01));
  CHECK(q.Quantile(0.9) == Approx(-1.0 + 1.2816 * 0.3).margin(0.015));
  CHECK(q.RobustSigma() == Approx(0.3).margin(0.01));
  CHECK(1 - q.Cdf(-1.0 + 0.6) == Approx(0.0228).margin(0.003));
}

TEST_CASE("BinnedQuantiles: memory is bounded, outliers clamp to edge bins", "[predictors][sketch]") {
  BinnedQuantiles q(0.01, 64);
  for (int i = 0; i < 1000; ++i) q.Add(0.001 * i);
  q.Add(1e6);
  q.Add(-1e6);
  q.Add(std::nan(""));  // ignored
  CHECK(q.bins() <= 64);
  CHECK(q.count() == 1002);
  CHECK(q.Quantile(0.5) == Approx(0.5).margin(0.02));
  CHECK(q.max() == 1e6);
}

TEST_CASE("BinnedQuantiles: cache refresh keeps small-n answers exact", "[predictors][sketch]") {
  BinnedQuantiles q(0.01, 4096);
  q.Add(1.0);
  CHECK(q.Quantile(0.5) == Approx(1.0).margin(0.01));
  q.Add(3.0);
  q.Add(3.0);
  CHECK(q.Quantile(0.9) == Approx(3.0).margin(0.01));  // refreshed after every add while n < 64
}
