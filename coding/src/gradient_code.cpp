#include "tailcut/coding/gradient_code.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "gaussian.h"

namespace tailcut::coding {

namespace {
Status CheckNs(int n, int s) {
  if (n < 1 || s < 0 || s >= n) {
    return Status::InvalidArgument("GradientCode: need n >= 1 and 0 <= s < n, got n=" +
                                   std::to_string(n) + " s=" + std::to_string(s));
  }
  return Status::Ok();
}
}  // namespace

StatusOr<GradientCode> GradientCode::FractionalRepetition(int n, int s) {
  if (Status st = CheckNs(n, s); !st.ok()) return st;
  if (n % (s + 1) != 0) {
    return Status::InvalidArgument("GradientCode::FractionalRepetition: (s+1)=" +
                                   std::to_string(s + 1) + " does not divide n=" + std::to_string(n));
  }
  Matrix b(n, n);
  for (int i = 0; i < n; ++i) {
    const int first = (i / (s + 1)) * (s + 1);
    for (int j = first; j <= first + s; ++j) b(i, j) = 1.0;
  }
  return GradientCode(n, s, Kind::kFractionalRepetition, std::move(b));
}

namespace {
// Tandon et al. Algorithm 2 for one seed; InvalidArgument-free (n, s checked).
StatusOr<Matrix> CyclicFromSeed(int n, int s, std::uint64_t seed) {
  // H: s x n Gaussian whose last column makes every row sum to zero, so
  // H * ones = 0.
  internal::Gaussian gauss(seed);
  Matrix h(s, n);
  for (int r = 0; r < s; ++r) {
    double sum = 0.0;
    for (int c = 0; c < n - 1; ++c) {
      h(r, c) = gauss();
      sum += h(r, c);
    }
    h(r, n - 1) = -sum;
  }
  Matrix b(n, n);
  for (int i = 0; i < n; ++i) {
    // Row i: b(i,i) = 1 and x on columns i+1..i+s with H[:, cols] x = -H[:, i].
    Matrix sub(s, s);
    Matrix rhs(s, 1);
    for (int r = 0; r < s; ++r) {
      for (int t = 0; t < s; ++t) sub(r, t) = h(r, (i + 1 + t) % n);
      rhs(r, 0) = -h(r, i);
    }
    auto x = Solve(sub, rhs);
    if (!x.ok()) return x.status();
    b(i, i) = 1.0;
    for (int t = 0; t < s; ++t) b(i, (i + 1 + t) % n) = (*x)(t, 0);
  }
  return b;
}
}  // namespace

StatusOr<GradientCode> GradientCode::CyclicRepetition(int n, int s, std::uint64_t seed,
                                                      int candidates) {
  if (Status st = CheckNs(n, s); !st.ok()) return st;
  if (s == 0) return GradientCode(n, s, Kind::kCyclicRepetition, Matrix::Identity(n));
  // Large entries of B come from nearly singular s x s blocks of H and go
  // with badly conditioned decoding systems, so keep the candidate whose
  // largest |B(i,j)| is smallest (measured: it cuts the worst decode
  // condition number by 1-3 orders of magnitude; docs/CODING.md).
  std::optional<Matrix> best;
  double best_max = 0.0;
  for (int c = 0; c < std::max(candidates, 1); ++c) {
    auto b = CyclicFromSeed(n, s, seed + static_cast<std::uint64_t>(c));
    if (!b.ok()) continue;
    double m = 0.0;
    for (double v : b->data()) m = std::max(m, std::abs(v));
    if (!best || m < best_max) {
      best = std::move(*b);
      best_max = m;
    }
  }
  if (!best) {
    return Status::Internal("GradientCode::CyclicRepetition: every candidate H had a singular "
                            "block; try another seed");
  }
  return GradientCode(n, s, Kind::kCyclicRepetition, std::move(*best));
}

std::vector<int> GradientCode::PartitionsOf(int worker) const {
  std::vector<int> parts;
  if (worker < 0 || worker >= n_) return parts;
  const int first = kind_ == Kind::kFractionalRepetition ? (worker / (s_ + 1)) * (s_ + 1) : worker;
  for (int t = 0; t <= s_; ++t) parts.push_back((first + t) % n_);
  return parts;
}

Status GradientCode::CheckWorkers(const std::vector<int>& workers) const {
  std::vector<bool> seen(static_cast<std::size_t>(n_), false);
  for (int w : workers) {
    if (w < 0 || w >= n_) {
      return Status::InvalidArgument("GradientCode: worker " + std::to_string(w) +
                                     " out of range [0, " + std::to_string(n_) + ")");
    }
    if (seen[w]) return Status::InvalidArgument("GradientCode: duplicate worker " + std::to_string(w));
    seen[w] = true;
  }
  if (static_cast<int>(workers.size()) < n_ - s_) {
    return Status::InvalidArgument("GradientCode: need at least n-s=" + std::to_string(n_ - s_) +
                                   " finished workers, got " + std::to_string(workers.size()));
  }
  return Status::Ok();
}

StatusOr<std::vector<double>> GradientCode::DecodingVector(
    const std::vector<int>& finished_workers) const {
  if (Status st = CheckWorkers(finished_workers); !st.ok()) return st;
  std::vector<int> f = finished_workers;
  std::sort(f.begin(), f.end());
  std::vector<double> a(static_cast<std::size_t>(n_), 0.0);

  if (kind_ == Kind::kFractionalRepetition) {
    // One survivor per group, coefficient 1. n-s survivors cover every
    // group because a group has only s+1 members.
    const int groups = n_ / (s_ + 1);
    std::vector<bool> covered(static_cast<std::size_t>(groups), false);
    for (int w : f) {
      const int g = w / (s_ + 1);
      if (!covered[g]) {
        covered[g] = true;
        a[w] = 1.0;
      }
    }
    return a;
  }

  // Cyclic: B_F^T a = 1 with F the first n-s finished workers; B_F^T is
  // n x (n-s) with full column rank, and the system is consistent.
  f.resize(static_cast<std::size_t>(n_ - s_));
  const Matrix bt = b_.SelectRows(f).Transpose();
  const Matrix ones(n_, 1, 1.0);
  auto x = LeastSquares(bt, ones);
  if (!x.ok()) return x.status();
  // Consistency check: the residual must be at rounding level.
  auto fit = bt.Multiply(*x);
  double resid = 0.0;
  for (int j = 0; j < n_; ++j) resid = std::max(resid, std::abs((*fit)(j, 0) - 1.0));
  if (!(resid <= 1e-6)) {
    return Status::Internal("GradientCode: ones not in the row span of B_F (residual " +
                            std::to_string(resid) + ")");
  }
  for (std::size_t t = 0; t < f.size(); ++t) a[f[t]] = (*x)(static_cast<int>(t), 0);
  return a;
}

StatusOr<std::vector<double>> GradientCode::Combine(
    int worker, const std::vector<std::vector<double>>& partials) const {
  if (worker < 0 || worker >= n_) {
    return Status::InvalidArgument("GradientCode::Combine: worker " + std::to_string(worker) +
                                   " out of range");
  }
  const std::vector<int> parts = PartitionsOf(worker);
  if (partials.size() != parts.size()) {
    return Status::InvalidArgument("GradientCode::Combine: expected " + std::to_string(parts.size()) +
                                   " partial gradients, got " + std::to_string(partials.size()));
  }
  const std::size_t dim = partials.front().size();
  std::vector<double> out(dim, 0.0);
  for (std::size_t t = 0; t < parts.size(); ++t) {
    if (partials[t].size() != dim) {
      return Status::InvalidArgument("GradientCode::Combine: partial gradients differ in length");
    }
    const double c = b_(worker, parts[t]);
    for (std::size_t e = 0; e < dim; ++e) out[e] += c * partials[t][e];
  }
  return out;
}

StatusOr<std::vector<double>> GradientCode::Decode(
    const std::vector<std::pair<int, std::vector<double>>>& coded) const {
  std::vector<int> workers;
  workers.reserve(coded.size());
  for (const auto& c : coded) workers.push_back(c.first);
  auto a = DecodingVector(workers);
  if (!a.ok()) return a.status();
  const std::size_t dim = coded.front().second.size();  // non-empty: n-s >= 1
  std::vector<double> sum(dim, 0.0);
  for (const auto& [w, g] : coded) {
    if (g.size() != dim) {
      return Status::InvalidArgument("GradientCode::Decode: coded gradients differ in length");
    }
    const double c = (*a)[w];
    if (c == 0.0) continue;
    for (std::size_t e = 0; e < dim; ++e) sum[e] += c * g[e];
  }
  return sum;
}

}  // namespace tailcut::coding
