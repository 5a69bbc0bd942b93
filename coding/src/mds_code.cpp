#include "tailcut/coding/mds_code.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "gaussian.h"

namespace tailcut::coding {

namespace {

// n Chebyshev points of [-1, 1], ascending; the k data nodes are spread
// evenly among them and the other n-k are parity nodes, so the two sets
// interleave (parity rows interpolate rather than extrapolate).
void InterleavedNodes(int n, int k, std::vector<double>* data, std::vector<double>* parity) {
  std::vector<double> t(static_cast<std::size_t>(n));
  for (int m = 0; m < n; ++m) t[m] = -std::cos(std::numbers::pi * (2.0 * m + 1.0) / (2.0 * n));
  std::vector<bool> is_data(static_cast<std::size_t>(n), false);
  for (int j = 0; j < k; ++j) is_data[static_cast<std::size_t>((j + 0.5) * n / k)] = true;
  for (int m = 0; m < n; ++m) (is_data[m] ? data : parity)->push_back(t[m]);
}

Matrix ParityRows(int n, int k, MdsParity kind, std::uint64_t seed) {
  const int r = n - k;
  Matrix p(r, k);
  switch (kind) {
    case MdsParity::kGaussian: {
      internal::Gaussian g(seed);
      const double scale = 1.0 / std::sqrt(static_cast<double>(k));
      for (int i = 0; i < r; ++i)
        for (int j = 0; j < k; ++j) p(i, j) = scale * g();
      break;
    }
    case MdsParity::kCauchy: {
      std::vector<double> y, x;
      InterleavedNodes(n, k, &y, &x);
      for (int i = 0; i < r; ++i)
        for (int j = 0; j < k; ++j) p(i, j) = 1.0 / (x[i] - y[j]);
      // Scale each row to unit 2-norm; row scaling keeps the MDS property.
      for (int i = 0; i < r; ++i) {
        double s = 0.0;
        for (int j = 0; j < k; ++j) s += p(i, j) * p(i, j);
        s = std::sqrt(s);
        for (int j = 0; j < k; ++j) p(i, j) /= s;
      }
      break;
    }
    case MdsParity::kChebyshevVandermonde: {
      std::vector<double> y, x;
      InterleavedNodes(n, k, &y, &x);
      for (int i = 0; i < r; ++i)
        for (int j = 0; j < k; ++j) {
          double l = 1.0;  // Lagrange basis polynomial j at x_i
          for (int m = 0; m < k; ++m)
            if (m != j) l *= (x[i] - y[m]) / (y[j] - y[m]);
          p(i, j) = l;
        }
      break;
    }
  }
  return p;
}

}  // namespace

StatusOr<MdsCode> MdsCode::Systematic(int n, int k) {
  return Systematic(n, k, MdsParity::kGaussian, kDefaultSeed);
}

StatusOr<MdsCode> MdsCode::Systematic(int n, int k, MdsParity parity, std::uint64_t seed) {
  if (k < 1 || n < k) {
    return Status::InvalidArgument("MdsCode: need 1 <= k <= n, got n=" + std::to_string(n) +
                                   " k=" + std::to_string(k));
  }
  Matrix g(n, k);
  for (int i = 0; i < k; ++i) g(i, i) = 1.0;
  const Matrix p = ParityRows(n, k, parity, seed);
  for (int i = 0; i < n - k; ++i)
    for (int j = 0; j < k; ++j) g(k + i, j) = p(i, j);
  return MdsCode(n, k, parity, std::move(g));
}

std::vector<Matrix> MdsCode::Encode(const Matrix& a) const {
  const int b = BlockRows(a.rows());
  std::vector<Matrix> blocks;
  blocks.reserve(static_cast<std::size_t>(n_));
  for (int j = 0; j < k_; ++j) blocks.push_back(a.RowBlock(j * b, b));
  for (int i = k_; i < n_; ++i) {
    Matrix e(b, a.cols());
    for (int j = 0; j < k_; ++j) {
      const double c = g_(i, j);
      if (c != 0.0) (void)e.AddScaled(c, blocks[j]);  // shapes match by construction
    }
    blocks.push_back(std::move(e));
  }
  return blocks;
}

StatusOr<MdsCode::Plan> MdsCode::MakePlan(const std::vector<int>& indices) const {
  if (static_cast<int>(indices.size()) < k_) {
    return Status::InvalidArgument("MdsCode: need at least k=" + std::to_string(k_) +
                                   " results, got " + std::to_string(indices.size()));
  }
  std::vector<bool> seen(static_cast<std::size_t>(n_), false);
  for (int idx : indices) {
    if (idx < 0 || idx >= n_) {
      return Status::InvalidArgument("MdsCode: block index " + std::to_string(idx) +
                                     " out of range [0, " + std::to_string(n_) + ")");
    }
    if (seen[idx]) return Status::InvalidArgument("MdsCode: duplicate block index " + std::to_string(idx));
    seen[idx] = true;
  }
  Plan plan;
  for (int j = 0; j < k_; ++j)
    if (!seen[j]) plan.missing_data.push_back(j);
  // Parity results in the order given; use only as many as are missing.
  for (int idx : indices) {
    if (plan.parity_used.size() == plan.missing_data.size()) break;
    if (idx >= k_) plan.parity_used.push_back(idx);
  }
  return plan;
}

StatusOr<double> MdsCode::DecodeConditionNumber(const std::vector<int>& indices) const {
  auto plan = MakePlan(indices);
  if (!plan.ok()) return plan.status();
  const int m = static_cast<int>(plan->missing_data.size());
  if (m == 0) return 1.0;
  Matrix sub(m, m);
  for (int r = 0; r < m; ++r)
    for (int c = 0; c < m; ++c) sub(r, c) = g_(plan->parity_used[r], plan->missing_data[c]);
  return ConditionNumber2(sub);
}

StatusOr<Matrix> MdsCode::Decode(const std::vector<std::pair<int, Matrix>>& results,
                                 int original_rows) const {
  std::vector<int> indices;
  indices.reserve(results.size());
  for (const auto& r : results) indices.push_back(r.first);
  auto plan = MakePlan(indices);
  if (!plan.ok()) return plan.status();

  const int b = results.front().second.rows();
  const int c = results.front().second.cols();
  for (const auto& r : results) {
    if (r.second.rows() != b || r.second.cols() != c) {
      return Status::InvalidArgument("MdsCode::Decode: results have different shapes");
    }
  }
  if (original_rows < 0 || BlockRows(original_rows) != b) {
    return Status::InvalidArgument("MdsCode::Decode: original_rows=" + std::to_string(original_rows) +
                                   " does not give block height " + std::to_string(b));
  }

  // Map block index -> received product.
  std::vector<const Matrix*> got(static_cast<std::size_t>(n_), nullptr);
  for (const auto& r : results) got[r.first] = &r.second;

  std::vector<Matrix> data(static_cast<std::size_t>(k_));
  for (int j = 0; j < k_; ++j)
    if (got[j]) data[j] = *got[j];

  const int m = static_cast<int>(plan->missing_data.size());
  if (m > 0) {
    // For parity p: P_p - sum_{j received} G(p,j) D_j = sum_{j missing} G(p,j) D_j.
    // Each block is flattened into one row (b*c entries) of the right-hand side,
    // so one m x m LU solve recovers every missing block at once.
    const int width = b * c;
    Matrix sub(m, m);
    Matrix rhs(m, width);
    for (int r = 0; r < m; ++r) {
      const int p = plan->parity_used[r];
      for (int t = 0; t < m; ++t) sub(r, t) = g_(p, plan->missing_data[t]);
      std::copy(got[p]->data().begin(), got[p]->data().end(), rhs.row(r));
      for (int j = 0; j < k_; ++j) {
        if (!got[j]) continue;
        const double coef = g_(p, j);
        if (coef == 0.0) continue;
        const double* src = got[j]->data().data();
        double* dst = rhs.row(r);
        for (int e = 0; e < width; ++e) dst[e] -= coef * src[e];
      }
    }
    auto sol = Solve(sub, rhs);
    if (!sol.ok()) return sol.status();
    for (int t = 0; t < m; ++t) {
      Matrix blk(b, c);
      std::copy(sol->row(t), sol->row(t) + width, blk.data().begin());
      data[plan->missing_data[t]] = std::move(blk);
    }
  }

  Matrix out(original_rows, c);
  for (int row = 0; row < original_rows; ++row) {
    const Matrix& blk = data[row / std::max(b, 1)];
    const int br = row % std::max(b, 1);
    std::copy(blk.row(br), blk.row(br) + c, out.row(row));
  }
  return out;
}

}  // namespace tailcut::coding
