// Summary statistics shared by every report (tailcut sim, bench, demo,
// train): one quantile definition everywhere.
#pragma once

#include <vector>

namespace tailcut {

// Nearest-rank quantile of ascending `sorted` values: the ceil(q n)-th
// smallest (the smallest for q <= 0, the largest for q >= 1); 0 when empty.
double Quantile(const std::vector<double>& sorted, double q);
// The same on unsorted values (sorts a copy).
double QuantileOf(std::vector<double> values, double q);
// Arithmetic mean; 0 when empty.
double Mean(const std::vector<double>& values);

}  // namespace tailcut
