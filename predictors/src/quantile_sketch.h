// Streaming quantiles with bounded memory: a fixed-width histogram over a
// real axis (the predictors feed it log run times or log residuals, so a
// 0.01 bin is ~1% relative resolution). The bin range grows on demand up to
// max_bins; values beyond clamp into the edge bins. Quantile/CDF queries use
// a prefix-sum cache that is refreshed lazily once ~1.5% new samples (or any
// sample while n < 64) arrived, so queries are O(1) amortised; the common
// quantiles (p25, p50, p75, p90, p99) are precomputed at each refresh.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tailcut {

class BinnedQuantiles {
 public:
  explicit BinnedQuantiles(double bin_width = 0.01, uint32_t max_bins = 4096);

  void Add(double v);
  uint64_t count() const { return n_; }
  // q in [0,1]; 0 when empty. Linear interpolation inside a bin.
  double Quantile(double q) const;
  // Fraction of samples <= v (interpolated), 0 when empty.
  double Cdf(double v) const;
  // Fraction > v, smoothed as (n*S + 0.5) / (n + 1) so it is never 0 or 1.
  double SmoothedSurvival(double v) const;
  // (p75 - p25) / 1.349: a robust standard deviation.
  double RobustSigma() const;
  size_t bins() const { return counts_.size(); }
  double min() const { return min_; }
  double max() const { return max_; }

 private:
  void Refresh() const;
  double QuantileUncached(double q) const;
  static constexpr double kCachedQ[5] = {0.25, 0.5, 0.75, 0.9, 0.99};
  int64_t BinOf(double v) const;
  double width_;
  uint32_t max_bins_;
  int64_t lo_ = 0;                 // bin index of counts_[0]
  std::vector<uint64_t> counts_;
  uint64_t n_ = 0;
  double min_ = 0, max_ = 0;
  mutable std::vector<uint64_t> prefix_;  // prefix_[i] = sum counts_[0..i)
  mutable uint64_t cached_n_ = 0;
  mutable double cached_q_[5] = {0, 0, 0, 0, 0};  // kCachedQ at the last refresh
};

}  // namespace tailcut
