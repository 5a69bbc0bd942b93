#include "tailcut/common/stats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "tailcut/common/random.h"

namespace tailcut {

double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double rank = std::ceil(q * static_cast<double>(sorted.size()));
  size_t i = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

double QuantileOf(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return Quantile(values, q);
}

double Mean(const std::vector<double>& values) {
  double sum = 0;
  for (double x : values) sum += x;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

namespace {

// The q-quantile of `resamples` resamples of `values`, drawn from `rng`.
std::vector<double> Resampled(const std::vector<double>& values, double q, uint32_t resamples, Rng& rng) {
  std::vector<double> out, draw(values.size());
  out.reserve(resamples);
  for (uint32_t r = 0; r < resamples; ++r) {
    for (double& x : draw) x = values[rng.Below(values.size())];
    // nth_element, not a sort: the same nearest-rank element, O(n).
    double rank = std::ceil(q * static_cast<double>(draw.size()));
    size_t i = std::min(rank < 1 ? 0 : static_cast<size_t>(rank) - 1, draw.size() - 1);
    std::nth_element(draw.begin(), draw.begin() + static_cast<std::ptrdiff_t>(i), draw.end());
    out.push_back(draw[i]);
  }
  return out;
}

Interval Percentiles(std::vector<double> stats, double level) {
  std::sort(stats.begin(), stats.end());
  return {Quantile(stats, (1 - level) / 2), Quantile(stats, (1 + level) / 2)};
}

}  // namespace

Interval BootstrapQuantile(const std::vector<double>& values, double q, const BootstrapOptions& o) {
  if (values.empty() || o.resamples == 0) return {};
  Rng rng(o.seed);
  return Percentiles(Resampled(values, q, o.resamples, rng), o.level);
}

Interval BootstrapQuantileRatio(const std::vector<double>& a, const std::vector<double>& b, double q,
                                const BootstrapOptions& o) {
  if (a.empty() || b.empty() || o.resamples == 0) return {};
  Rng ra(o.seed), rb(Mix(o.seed ^ 0x62627331ULL));  // independent streams for the two samples
  std::vector<double> qa = Resampled(a, q, o.resamples, ra), qb = Resampled(b, q, o.resamples, rb);
  for (size_t i = 0; i < qa.size(); ++i) qa[i] = qb[i] > 0 ? qa[i] / qb[i] : std::numeric_limits<double>::infinity();
  return Percentiles(std::move(qa), o.level);
}

}  // namespace tailcut
