#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "tailcut/coding/matrix.h"
#include "test_util.h"

using tailcut::Status;
using tailcut::coding::ConditionNumber1;
using tailcut::coding::ConditionNumber2;
using tailcut::coding::Inverse;
using tailcut::coding::LeastSquares;
using tailcut::coding::Matrix;
using tailcut::coding::SingularValues;
using tailcut::coding::Solve;
using tailcut::coding::testing::RandomMatrix;
using tailcut::coding::testing::RelErr;

namespace {
Matrix Hilbert(int n) {
  Matrix h(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) h(i, j) = 1.0 / (i + j + 1);
  return h;
}
}  // namespace

TEST_CASE("Matrix basics: FromData, transpose, multiply, row blocks", "[coding][matrix]") {
  auto a = Matrix::FromData(2, 3, {1, 2, 3, 4, 5, 6});
  REQUIRE(a.ok());
  CHECK(a->Transpose()(2, 1) == 6);
  CHECK_FALSE(Matrix::FromData(2, 2, {1, 2, 3}).ok());

  auto b = Matrix::FromData(3, 1, {1, 1, 1}).value();
  auto ab = a->Multiply(b);
  REQUIRE(ab.ok());
  CHECK((*ab)(0, 0) == 6);
  CHECK((*ab)(1, 0) == 15);
  auto bad = a->Multiply(*a);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == Status::Code::kInvalidArgument);

  Matrix blk = a->RowBlock(1, 2);  // row 1 and a zero padding row
  CHECK(blk.rows() == 2);
  CHECK(blk(0, 0) == 4);
  CHECK(blk(1, 2) == 0);
  CHECK(Matrix::Identity(3).NormOne() == 1);
}

TEST_CASE("Solve: LU with partial pivoting", "[coding][matrix]") {
  std::mt19937_64 rng(1);
  for (int n : {1, 2, 5, 20, 60}) {
    Matrix a = RandomMatrix(n, n, rng);
    Matrix x = RandomMatrix(n, 3, rng);
    Matrix b = a.Multiply(x).value();
    auto got = Solve(a, b);
    REQUIRE(got.ok());
    CHECK(RelErr(*got, x) < 1e-10);
  }
  // Needs pivoting: zero leading entry.
  auto p = Matrix::FromData(2, 2, {0, 1, 1, 0}).value();
  auto r = Solve(p, Matrix::FromData(2, 1, {2, 3}).value());
  REQUIRE(r.ok());
  CHECK((*r)(0, 0) == 3);
  CHECK((*r)(1, 0) == 2);
  // Singular and non-square.
  auto sing = Matrix::FromData(2, 2, {1, 2, 2, 4}).value();
  CHECK(Solve(sing, Matrix(2, 1, 1.0)).status().code() == Status::Code::kFailedPrecondition);
  CHECK(Solve(Matrix(2, 3), Matrix(2, 1)).status().code() == Status::Code::kInvalidArgument);
  auto inv = Inverse(Hilbert(4));
  REQUIRE(inv.ok());
  CHECK((*inv)(0, 0) == Approx(16).epsilon(1e-9));
}

TEST_CASE("LeastSquares: Householder QR", "[coding][matrix]") {
  std::mt19937_64 rng(2);
  // Consistent overdetermined system: exact recovery.
  Matrix a = RandomMatrix(30, 7, rng);
  Matrix x = RandomMatrix(7, 2, rng);
  auto got = LeastSquares(a, a.Multiply(x).value());
  REQUIRE(got.ok());
  CHECK(RelErr(*got, x) < 1e-12);
  // Inconsistent: residual orthogonal to range(A) (normal equations hold).
  Matrix b = RandomMatrix(30, 1, rng);
  auto ls = LeastSquares(a, b);
  REQUIRE(ls.ok());
  Matrix r = a.Multiply(*ls).value();
  REQUIRE(r.AddScaled(-1.0, b).ok());
  Matrix atr = a.Transpose().Multiply(r).value();
  CHECK(atr.NormFrobenius() < 1e-12 * a.NormFrobenius() * b.NormFrobenius());
  // Rank deficient and underdetermined.
  Matrix dup(4, 2, 1.0);
  CHECK(LeastSquares(dup, Matrix(4, 1, 1.0)).status().code() == Status::Code::kFailedPrecondition);
  CHECK(LeastSquares(Matrix(2, 3, 1.0), Matrix(2, 1)).status().code() ==
        Status::Code::kInvalidArgument);
}

TEST_CASE("Singular values and condition numbers", "[coding][matrix]") {
  auto d = Matrix::FromData(3, 2, {3, 0, 0, -4, 0, 0}).value();
  auto sv = SingularValues(d);
  REQUIRE(sv.size() == 2);
  CHECK(sv[0] == Approx(4));
  CHECK(sv[1] == Approx(3));
  CHECK(SingularValues(d.Transpose())[1] == Approx(3));
  CHECK(ConditionNumber2(d) == Approx(4.0 / 3.0));
  // Known values for the 4x4 Hilbert matrix.
  CHECK(ConditionNumber2(Hilbert(4)) == Approx(15513.7387).epsilon(1e-6));
  CHECK(ConditionNumber1(Hilbert(4)) == Approx(28375).epsilon(1e-9));
  CHECK(std::isinf(ConditionNumber2(Matrix(2, 2, 1.0))));
  CHECK(std::isinf(ConditionNumber1(Matrix(2, 2, 1.0))));
  // Orthogonal matrix: cond 1.
  const double c = std::cos(0.3), s = std::sin(0.3);
  CHECK(ConditionNumber2(Matrix::FromData(2, 2, {c, -s, s, c}).value()) == Approx(1.0));
}
