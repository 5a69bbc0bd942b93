#include "tailcut/coding/matrix.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>

namespace tailcut::coding {

namespace {
constexpr double kEps = std::numeric_limits<double>::epsilon();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string Shape(const Matrix& m) {
  return std::to_string(m.rows()) + "x" + std::to_string(m.cols());
}
}  // namespace

Matrix::Matrix(int rows, int cols, double fill)
    : rows_(std::max(rows, 0)),
      cols_(std::max(cols, 0)),
      data_(static_cast<std::size_t>(rows_) * cols_, fill) {}

StatusOr<Matrix> Matrix::FromData(int rows, int cols, std::vector<double> data) {
  if (rows < 0 || cols < 0 ||
      data.size() != static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols)) {
    return Status::InvalidArgument("Matrix::FromData: data size does not match " +
                                   std::to_string(rows) + "x" + std::to_string(cols));
  }
  Matrix m;
  m.rows_ = rows;
  m.cols_ = cols;
  m.data_ = std::move(data);
  return m;
}

Matrix Matrix::Identity(int n) {
  Matrix m(n, n);
  for (int i = 0; i < m.rows(); ++i) m(i, i) = 1.0;
  return m;
}

Matrix Matrix::Transpose() const {
  Matrix t(cols_, rows_);
  for (int i = 0; i < rows_; ++i)
    for (int j = 0; j < cols_; ++j) t(j, i) = (*this)(i, j);
  return t;
}

StatusOr<Matrix> Matrix::Multiply(const Matrix& b) const {
  if (cols_ != b.rows_) {
    return Status::InvalidArgument("Matrix::Multiply: " + Shape(*this) + " * " + Shape(b));
  }
  Matrix c(rows_, b.cols_);
  // i-k-j order: the inner loop streams rows of b and c.
  for (int i = 0; i < rows_; ++i) {
    double* ci = c.row(i);
    const double* ai = row(i);
    for (int k = 0; k < cols_; ++k) {
      const double aik = ai[k];
      if (aik == 0.0) continue;
      const double* bk = b.row(k);
      for (int j = 0; j < b.cols_; ++j) ci[j] += aik * bk[j];
    }
  }
  return c;
}

Matrix Matrix::RowBlock(int begin, int count) const {
  Matrix blk(count, cols_);
  for (int i = 0; i < blk.rows(); ++i) {
    const int src = begin + i;
    if (src < 0 || src >= rows_) continue;  // zero padding
    std::copy(row(src), row(src) + cols_, blk.row(i));
  }
  return blk;
}

Matrix Matrix::SelectRows(const std::vector<int>& rows) const {
  Matrix out(static_cast<int>(rows.size()), cols_);
  for (int i = 0; i < out.rows(); ++i) std::copy(row(rows[i]), row(rows[i]) + cols_, out.row(i));
  return out;
}

Status Matrix::AddScaled(double alpha, const Matrix& b) {
  if (rows_ != b.rows_ || cols_ != b.cols_) {
    return Status::InvalidArgument("Matrix::AddScaled: " + Shape(*this) + " vs " + Shape(b));
  }
  for (std::size_t i = 0; i < data_.size(); ++i) data_[i] += alpha * b.data_[i];
  return Status::Ok();
}

double Matrix::NormOne() const {
  double best = 0.0;
  for (int j = 0; j < cols_; ++j) {
    double s = 0.0;
    for (int i = 0; i < rows_; ++i) s += std::abs((*this)(i, j));
    best = std::max(best, s);
  }
  return best;
}

double Matrix::NormFrobenius() const {
  double s = 0.0;
  for (double v : data_) s += v * v;
  return std::sqrt(s);
}

double Matrix::DiffFrobenius(const Matrix& a, const Matrix& b) {
  if (a.rows_ != b.rows_ || a.cols_ != b.cols_) return kInf;
  double s = 0.0;
  for (std::size_t i = 0; i < a.data_.size(); ++i) {
    const double d = a.data_[i] - b.data_[i];
    s += d * d;
  }
  return std::sqrt(s);
}

StatusOr<Matrix> Solve(const Matrix& a, const Matrix& b) {
  const int n = a.rows();
  if (a.cols() != n) return Status::InvalidArgument("Solve: matrix is not square: " + Shape(a));
  if (b.rows() != n) return Status::InvalidArgument("Solve: rhs is " + Shape(b) + ", A is " + Shape(a));
  Matrix lu = a;
  Matrix x = b;
  double scale = 0.0;
  for (double v : lu.data()) scale = std::max(scale, std::abs(v));
  const double tiny = scale * kEps * std::max(n, 1);
  // In-place Doolittle LU with partial pivoting; the row swaps and the
  // elimination are applied to the right-hand side as we go.
  for (int k = 0; k < n; ++k) {
    int p = k;
    for (int i = k + 1; i < n; ++i)
      if (std::abs(lu(i, k)) > std::abs(lu(p, k))) p = i;
    if (!(std::abs(lu(p, k)) > tiny)) {
      return Status::FailedPrecondition("Solve: matrix is singular to working precision");
    }
    if (p != k) {
      std::swap_ranges(lu.row(k), lu.row(k) + n, lu.row(p));
      std::swap_ranges(x.row(k), x.row(k) + x.cols(), x.row(p));
    }
    const double pivot = lu(k, k);
    for (int i = k + 1; i < n; ++i) {
      const double l = lu(i, k) / pivot;
      if (l == 0.0) continue;
      lu(i, k) = l;
      for (int j = k + 1; j < n; ++j) lu(i, j) -= l * lu(k, j);
      for (int j = 0; j < x.cols(); ++j) x(i, j) -= l * x(k, j);
    }
  }
  // Back substitution with U.
  for (int i = n - 1; i >= 0; --i) {
    double* xi = x.row(i);
    for (int k = i + 1; k < n; ++k) {
      const double u = lu(i, k);
      if (u == 0.0) continue;
      const double* xk = x.row(k);
      for (int j = 0; j < x.cols(); ++j) xi[j] -= u * xk[j];
    }
    const double d = lu(i, i);
    for (int j = 0; j < x.cols(); ++j) xi[j] /= d;
  }
  return x;
}

StatusOr<Matrix> Inverse(const Matrix& a) { return Solve(a, Matrix::Identity(a.rows())); }

StatusOr<Matrix> LeastSquares(const Matrix& a, const Matrix& b) {
  const int m = a.rows();
  const int n = a.cols();
  if (m < n) return Status::InvalidArgument("LeastSquares: underdetermined " + Shape(a));
  if (b.rows() != m) {
    return Status::InvalidArgument("LeastSquares: rhs is " + Shape(b) + ", A is " + Shape(a));
  }
  Matrix r = a;
  Matrix qtb = b;
  std::vector<double> v(static_cast<std::size_t>(m));
  for (int k = 0; k < n; ++k) {
    // Householder vector v for column k, rows k..m-1: H x = alpha e1.
    double norm = 0.0;
    for (int i = k; i < m; ++i) norm += r(i, k) * r(i, k);
    norm = std::sqrt(norm);
    if (norm == 0.0) continue;  // zero column; caught by the rank check below
    const double alpha = r(k, k) > 0 ? -norm : norm;  // avoid cancellation
    double vnorm2 = 0.0;
    for (int i = k; i < m; ++i) {
      v[i] = r(i, k) - (i == k ? alpha : 0.0);
      vnorm2 += v[i] * v[i];
    }
    if (vnorm2 == 0.0) continue;
    auto reflect = [&](Matrix& t, int col_begin) {
      for (int j = col_begin; j < t.cols(); ++j) {
        double dot = 0.0;
        for (int i = k; i < m; ++i) dot += v[i] * t(i, j);
        const double f = 2.0 * dot / vnorm2;
        for (int i = k; i < m; ++i) t(i, j) -= f * v[i];
      }
    };
    reflect(r, k + 1);
    reflect(qtb, 0);
    r(k, k) = alpha;
    for (int i = k + 1; i < m; ++i) r(i, k) = 0.0;
  }
  double rmax = 0.0;
  for (int k = 0; k < n; ++k) rmax = std::max(rmax, std::abs(r(k, k)));
  const double tiny = rmax * kEps * std::max(m, 1);
  Matrix x(n, b.cols());
  for (int i = n - 1; i >= 0; --i) {
    const double d = r(i, i);
    if (!(std::abs(d) > tiny)) {
      return Status::FailedPrecondition("LeastSquares: matrix is rank deficient");
    }
    for (int j = 0; j < b.cols(); ++j) {
      double s = qtb(i, j);
      for (int k = i + 1; k < n; ++k) s -= r(i, k) * x(k, j);
      x(i, j) = s / d;
    }
  }
  return x;
}

std::vector<double> SingularValues(const Matrix& a) {
  // Rows of w are the columns of A (or of A^T when A is wide), so we
  // orthogonalise min(m,n) vectors of length max(m,n).
  Matrix w = a.rows() >= a.cols() ? a.Transpose() : a;
  const int p = w.rows();
  const int len = w.cols();
  for (int sweep = 0; sweep < 80; ++sweep) {
    bool rotated = false;
    for (int i = 0; i < p - 1; ++i) {
      for (int j = i + 1; j < p; ++j) {
        double* u = w.row(i);
        double* z = w.row(j);
        double alpha = 0.0, beta = 0.0, gamma = 0.0;
        for (int t = 0; t < len; ++t) {
          alpha += u[t] * u[t];
          beta += z[t] * z[t];
          gamma += u[t] * z[t];
        }
        if (gamma == 0.0 || std::abs(gamma) <= kEps * std::sqrt(alpha * beta)) continue;
        rotated = true;
        const double zeta = (beta - alpha) / (2.0 * gamma);
        const double tn = (zeta >= 0 ? 1.0 : -1.0) / (std::abs(zeta) + std::sqrt(1.0 + zeta * zeta));
        const double c = 1.0 / std::sqrt(1.0 + tn * tn);
        const double s = c * tn;
        for (int t = 0; t < len; ++t) {
          const double ut = u[t];
          u[t] = c * ut - s * z[t];
          z[t] = s * ut + c * z[t];
        }
      }
    }
    if (!rotated) break;
  }
  std::vector<double> sv(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) {
    double s = 0.0;
    for (int t = 0; t < len; ++t) s += w(i, t) * w(i, t);
    sv[i] = std::sqrt(s);
  }
  std::sort(sv.begin(), sv.end(), std::greater<double>());
  return sv;
}

double ConditionNumber2(const Matrix& a) {
  const std::vector<double> sv = SingularValues(a);
  if (sv.empty()) return 1.0;
  if (sv.back() == 0.0) return kInf;
  return sv.front() / sv.back();
}

double ConditionNumber1(const Matrix& a) {
  if (a.rows() != a.cols()) return kInf;
  if (a.rows() == 0) return 1.0;
  auto inv = Inverse(a);
  if (!inv.ok()) return kInf;
  return a.NormOne() * inv->NormOne();
}

}  // namespace tailcut::coding
