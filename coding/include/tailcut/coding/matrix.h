// A tiny dense row-major double matrix plus the few routines the coding
// library needs: multiply, transpose, LU solve with partial pivoting,
// Householder-QR least squares and condition numbers. Sizes here are small
// (tens to a few hundred rows), so clarity wins over blocking/vectorising.
// No exceptions: shape errors come back as Status.
#pragma once

#include <cstddef>
#include <vector>

#include "tailcut/common/status.h"

namespace tailcut::coding {

class Matrix {
 public:
  Matrix() = default;
  // rows x cols, every entry `fill`. Negative sizes are clamped to 0.
  Matrix(int rows, int cols, double fill = 0.0);
  // Row-major data; data.size() must equal rows*cols (else an empty matrix).
  static StatusOr<Matrix> FromData(int rows, int cols, std::vector<double> data);
  static Matrix Identity(int n);

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  bool empty() const { return rows_ == 0 || cols_ == 0; }

  double& operator()(int r, int c) { return data_[static_cast<std::size_t>(r) * cols_ + c]; }
  double operator()(int r, int c) const { return data_[static_cast<std::size_t>(r) * cols_ + c]; }
  double* row(int r) { return data_.data() + static_cast<std::size_t>(r) * cols_; }
  const double* row(int r) const { return data_.data() + static_cast<std::size_t>(r) * cols_; }
  const std::vector<double>& data() const { return data_; }
  std::vector<double>& data() { return data_; }

  Matrix Transpose() const;
  // this * b; InvalidArgument when cols() != b.rows().
  StatusOr<Matrix> Multiply(const Matrix& b) const;
  // Rows [begin, begin+count) as a new matrix; rows past the end read as 0
  // (zero padding), so a block can always be cut.
  Matrix RowBlock(int begin, int count) const;
  // The rows listed in `rows`, in that order (indices must be in range).
  Matrix SelectRows(const std::vector<int>& rows) const;
  // this += alpha * b (same shape; InvalidArgument otherwise).
  Status AddScaled(double alpha, const Matrix& b);

  double NormOne() const;   // max column abs sum
  double NormFrobenius() const;
  // Frobenius norm of a - b; +inf when the shapes differ.
  static double DiffFrobenius(const Matrix& a, const Matrix& b);

 private:
  int rows_ = 0;
  int cols_ = 0;
  std::vector<double> data_;
};

// Solves A X = B for square A by LU with partial (row) pivoting.
// FailedPrecondition when A is singular to working precision (a pivot is
// exactly 0 or below n*eps*max|A|).
StatusOr<Matrix> Solve(const Matrix& a, const Matrix& b);

// Inverse of a square matrix via Solve(A, I).
StatusOr<Matrix> Inverse(const Matrix& a);

// Least squares: X minimising ||A X - B||_F for A (m x n), m >= n, full
// column rank, by Householder QR (A = QR; X = R^{-1} Q^T B). Never forms
// A^T A, so accuracy is governed by cond(A), not cond(A)^2.
// FailedPrecondition when R has a (numerically) zero diagonal entry.
StatusOr<Matrix> LeastSquares(const Matrix& a, const Matrix& b);

// Singular values of A (any shape), descending, by one-sided Jacobi
// (Hestenes) rotations. Accurate to high relative precision for the small
// matrices used here; O(min(m,n)^2 max(m,n)) per sweep.
std::vector<double> SingularValues(const Matrix& a);

// 2-norm condition number sigma_max / sigma_min(over min(m,n) values);
// +inf when sigma_min == 0. Works for rectangular A (the condition number
// that governs least squares with a consistent right-hand side).
double ConditionNumber2(const Matrix& a);

// 1-norm condition number ||A||_1 ||A^{-1}||_1 for square A, computed
// exactly from an explicit LU inverse (cheap at these sizes); +inf if
// singular.
double ConditionNumber1(const Matrix& a);

}  // namespace tailcut::coding
