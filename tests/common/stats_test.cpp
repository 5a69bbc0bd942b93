#include <catch2/catch.hpp>

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
