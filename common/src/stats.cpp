#include "tailcut/common/stats.h"

#include <algorithm>
#include <cmath>

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

}  // namespace tailcut
