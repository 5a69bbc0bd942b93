#include "quantile_sketch.h"

#include <algorithm>
#include <cmath>

namespace tailcut {

BinnedQuantiles::BinnedQuantiles(double bin_width, uint32_t max_bins)
    : width_(bin_width > 0 ? bin_width : 0.01), max_bins_(std::max<uint32_t>(max_bins, 2)) {}

int64_t BinnedQuantiles::BinOf(double v) const {
  double b = std::floor(v / width_);
  if (b > 1e15) b = 1e15;
  if (b < -1e15) b = -1e15;
  return static_cast<int64_t>(b);
}

void BinnedQuantiles::Add(double v) {
  if (!std::isfinite(v)) return;
  int64_t b = BinOf(v);
  if (counts_.empty()) {
    lo_ = b;
    counts_.assign(1, 0);
    min_ = max_ = v;
  }
  min_ = std::min(min_, v);
  max_ = std::max(max_, v);
  int64_t hi = lo_ + static_cast<int64_t>(counts_.size()) - 1;
  if (b < lo_) {
    int64_t grow = std::min<int64_t>(lo_ - b, static_cast<int64_t>(max_bins_) - static_cast<int64_t>(counts_.size()));
    if (grow > 0) {
      counts_.insert(counts_.begin(), static_cast<size_t>(grow), 0);
      lo_ -= grow;
    }
    b = std::max(b, lo_);
  } else if (b > hi) {
    int64_t grow = std::min<int64_t>(b - hi, static_cast<int64_t>(max_bins_) - static_cast<int64_t>(counts_.size()));
    if (grow > 0) counts_.resize(counts_.size() + static_cast<size_t>(grow), 0);
    hi = lo_ + static_cast<int64_t>(counts_.size()) - 1;
    b = std::min(b, hi);
  }
  ++counts_[static_cast<size_t>(b - lo_)];
  ++n_;
}

void BinnedQuantiles::Refresh() const {
  if (n_ == cached_n_ && prefix_.size() == counts_.size() + 1) return;
  uint64_t fresh = n_ - cached_n_;
  if (prefix_.size() == counts_.size() + 1 && n_ >= 64 && fresh * 64 < n_) return;
  prefix_.resize(counts_.size() + 1);
  uint64_t s = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    prefix_[i] = s;
    s += counts_[i];
  }
  prefix_[counts_.size()] = s;
  cached_n_ = n_;
  for (int k = 0; k < 5; ++k) cached_q_[k] = QuantileUncached(kCachedQ[k]);
}

double BinnedQuantiles::Quantile(double q) const {
  if (n_ == 0) return 0;
  Refresh();
  for (int k = 0; k < 5; ++k)
    if (q == kCachedQ[k]) return cached_q_[k];
  return QuantileUncached(q);
}

double BinnedQuantiles::QuantileUncached(double q) const {
  const uint64_t total = prefix_.back();
  if (total == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  double rank = q * static_cast<double>(total);
  // First bin whose cumulative end exceeds rank.
  auto it = std::upper_bound(prefix_.begin() + 1, prefix_.end(), static_cast<uint64_t>(std::floor(rank)));
  if (it == prefix_.end()) --it;
  size_t i = static_cast<size_t>(it - prefix_.begin()) - 1;
  double before = static_cast<double>(prefix_[i]);
  double c = static_cast<double>(prefix_[i + 1] - prefix_[i]);
  double frac = c > 0 ? std::clamp((rank - before) / c, 0.0, 1.0) : 0.5;
  double v = (static_cast<double>(lo_ + static_cast<int64_t>(i)) + frac) * width_;
  return std::clamp(v, min_, max_);
}

double BinnedQuantiles::Cdf(double v) const {
  if (n_ == 0) return 0;
  Refresh();
  const double total = static_cast<double>(prefix_.back());
  if (total == 0) return 0;
  if (v < min_) return 0;
  if (v >= max_) return 1;
  double pos = v / width_ - static_cast<double>(lo_);
  if (pos < 0) return 0;
  if (pos >= static_cast<double>(counts_.size())) return 1;
  size_t i = static_cast<size_t>(pos);
  double frac = pos - static_cast<double>(i);
  double below = static_cast<double>(prefix_[i]) + frac * static_cast<double>(prefix_[i + 1] - prefix_[i]);
  return std::clamp(below / total, 0.0, 1.0);
}

double BinnedQuantiles::SmoothedSurvival(double v) const {
  double n = static_cast<double>(n_);
  return (n * (1.0 - Cdf(v)) + 0.5) / (n + 1.0);
}

double BinnedQuantiles::RobustSigma() const {
  if (n_ < 2) return 0;
  return (Quantile(0.75) - Quantile(0.25)) / 1.349;
}

}  // namespace tailcut
