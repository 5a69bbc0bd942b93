#pragma once

#include <random>
#include <vector>

#include "tailcut/coding/matrix.h"

namespace tailcut::coding::testing {

inline Matrix RandomMatrix(int r, int c, std::mt19937_64& rng) {
  std::normal_distribution<double> nd;
  Matrix m(r, c);
  for (double& v : m.data()) v = nd(rng);
  return m;
}

inline double RelErr(const Matrix& got, const Matrix& want) {
  return Matrix::DiffFrobenius(got, want) / want.NormFrobenius();
}

// Calls f(subset) for every k-subset of [0, n) in lexicographic order.
template <typename F>
void ForEachSubset(int n, int k, F&& f) {
  std::vector<int> c(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) c[i] = i;
  while (true) {
    f(c);
    int i = k - 1;
    while (i >= 0 && c[i] == n - k + i) --i;
    if (i < 0) return;
    ++c[i];
    for (int j = i + 1; j < k; ++j) c[j] = c[j - 1] + 1;
  }
}

inline double Binomial(int n, int k) {
  double r = 1.0;
  for (int i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return r;
}

}  // namespace tailcut::coding::testing
