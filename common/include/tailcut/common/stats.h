// Summary statistics shared by every report (tailcut sim, bench, demo,
// train): one quantile definition everywhere.
#pragma once

#include <cstdint>
#include <vector>

namespace tailcut {

// Nearest-rank quantile of ascending `sorted` values: the ceil(q n)-th
// smallest (the smallest for q <= 0, the largest for q >= 1); 0 when empty.
double Quantile(const std::vector<double>& sorted, double q);
// The same on unsorted values (sorts a copy).
double QuantileOf(std::vector<double> values, double q);
// Arithmetic mean; 0 when empty.
double Mean(const std::vector<double>& values);

// Percentile-bootstrap confidence intervals (Efron): resample the values
// with replacement `resamples` times, take the statistic of each, and keep
// the (1 - level) / 2 and (1 + level) / 2 quantiles of those. Seeded
// (tailcut/common/random.h), so the same values give the same interval on
// every machine; the Python bench mirrors this (docs/benchmarks/live.md,
// "Confidence intervals"). {0, 0} when a sample is empty.
struct Interval {
  double lo = 0, hi = 0;
  bool Below(double x) const { return hi < x; }  // the whole interval under x
  bool Above(double x) const { return lo > x; }
};
struct BootstrapOptions {
  double level = 0.95;
  uint32_t resamples = 1000;
  uint64_t seed = 1;
};
// The q-quantile (nearest rank, as Quantile) of `values`.
Interval BootstrapQuantile(const std::vector<double>& values, double q, const BootstrapOptions& o = {});
// The ratio of the q-quantiles of `a` over `b`, two independent samples
// (each resampled on its own, paired by resample index).
Interval BootstrapQuantileRatio(const std::vector<double>& a, const std::vector<double>& b, double q,
                                const BootstrapOptions& o = {});

}  // namespace tailcut
