#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

#include "tailcut/coding/mds_code.h"
#include "test_util.h"

using tailcut::Status;
using tailcut::coding::Matrix;
using tailcut::coding::MdsCode;
using tailcut::coding::MdsParity;
using tailcut::coding::testing::Binomial;
using tailcut::coding::testing::ForEachSubset;
using tailcut::coding::testing::RandomMatrix;
using tailcut::coding::testing::RelErr;

namespace {

struct Products {
  Matrix ax;
  std::vector<Matrix> prod;  // block_i * X for every i
};

Products Make(const MdsCode& code, const Matrix& a, const Matrix& x) {
  Products p{a.Multiply(x).value(), {}};
  for (const Matrix& e : code.Encode(a)) p.prod.push_back(e.Multiply(x).value());
  return p;
}

// Max relative decode error over the given index sets (each decoded in
// the order given).
double MaxError(const MdsCode& code, const Products& p, int rows,
                const std::vector<std::vector<int>>& sets) {
  double worst = 0.0;
  for (const auto& s : sets) {
    std::vector<std::pair<int, Matrix>> res;
    for (int i : s) res.emplace_back(i, p.prod[i]);
    auto dec = code.Decode(res, rows);
    if (!dec.ok()) {
      FAIL_CHECK("decode failed: " << dec.status().ToString());
      return 1.0;
    }
    worst = std::max(worst, RelErr(*dec, p.ax));
  }
  return worst;
}

std::vector<std::vector<int>> AllOrSampledSubsets(int n, int k, std::mt19937_64& rng) {
  std::vector<std::vector<int>> sets;
  if (Binomial(n, k) <= 5000) {
    ForEachSubset(n, k, [&](const std::vector<int>& s) { sets.push_back(s); });
    return sets;
  }
  std::vector<int> all(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) all[i] = i;
  for (int t = 0; t < 500; ++t) {
    std::shuffle(all.begin(), all.end(), rng);
    sets.emplace_back(all.begin(), all.begin() + k);  // random order, too
  }
  // Worst patterns: as many data blocks lost as there are parities.
  std::vector<int> lose_first, lose_last;
  for (int i = 0; i < n; ++i) {
    if (i >= n - k) lose_first.push_back(i);
    if (i < k - (n - k) || i >= k) lose_last.push_back(i);
  }
  sets.push_back(lose_first);
  sets.push_back(lose_last);
  return sets;
}

}  // namespace

TEST_CASE("MdsCode: construction and systematic encoding", "[coding][mds]") {
  CHECK(MdsCode::Systematic(3, 4).status().code() == Status::Code::kInvalidArgument);
  CHECK(MdsCode::Systematic(3, 0).status().code() == Status::Code::kInvalidArgument);
  auto code = MdsCode::Systematic(5, 3);
  REQUIRE(code.ok());
  CHECK(code->n() == 5);
  CHECK(code->k() == 3);
  CHECK(code->generator().rows() == 5);
  CHECK(code->generator().cols() == 3);

  std::mt19937_64 rng(7);
  Matrix a = RandomMatrix(7, 4, rng);  // 7 rows, k=3: blocks of 3, 2 padding rows
  auto blocks = code->Encode(a);
  REQUIRE(blocks.size() == 5);
  for (const auto& b : blocks) {
    CHECK(b.rows() == 3);
    CHECK(b.cols() == 4);
  }
  CHECK(Matrix::DiffFrobenius(blocks[0], a.RowBlock(0, 3)) == 0.0);
  CHECK(Matrix::DiffFrobenius(blocks[2], a.RowBlock(6, 3)) == 0.0);
  CHECK(blocks[2](1, 0) == 0.0);  // padding
  // Deterministic: same code twice.
  CHECK(Matrix::DiffFrobenius(MdsCode::Systematic(5, 3)->generator(), code->generator()) == 0.0);
}

TEST_CASE("MdsCode: every k-subset decodes A*X", "[coding][mds]") {
  const std::vector<std::pair<int, int>> sizes = {{1, 1},  {3, 2},   {4, 4},   {5, 3},
                                                  {8, 4},  {12, 8},  {16, 12}, {16, 8},
                                                  {24, 16}, {32, 24}, {48, 32}, {64, 48}};
  for (auto [n, k] : sizes) {
    auto code = MdsCode::Systematic(n, k);
    REQUIRE(code.ok());
    std::mt19937_64 rng(100 + n * 7 + k);
    for (int xcols : {1, 5}) {  // matrix-vector and matrix-matrix
      const int rows = 3 * k + (k > 1 ? 1 : 0);  // rows % k != 0 when k > 1
      Matrix a = RandomMatrix(rows, 6, rng);
      Matrix x = RandomMatrix(6, xcols, rng);
      Products p = Make(*code, a, x);
      auto sets = AllOrSampledSubsets(n, k, rng);
      const double err = MaxError(*code, p, rows, sets);
      std::printf("MDS (n=%d,k=%d) X cols %d: %zu subsets, max rel decode error %.2e\n", n, k,
                  xcols, sets.size(), err);
      INFO("n=" << n << " k=" << k);
      CHECK(err < 1e-9);
    }
  }
}

TEST_CASE("MdsCode: the other parity constructions are MDS too (small n)", "[coding][mds]") {
  for (auto kind : {MdsParity::kCauchy, MdsParity::kChebyshevVandermonde}) {
    for (auto [n, k] : std::vector<std::pair<int, int>>{{3, 2}, {5, 3}, {8, 4}, {12, 8}}) {
      auto code = MdsCode::Systematic(n, k, kind);
      REQUIRE(code.ok());
      std::mt19937_64 rng(5);
      Matrix a = RandomMatrix(2 * k, 3, rng);
      Matrix x = RandomMatrix(3, 2, rng);
      Products p = Make(*code, a, x);
      std::vector<std::vector<int>> sets;
      ForEachSubset(n, k, [&](const std::vector<int>& s) { sets.push_back(s); });
      CHECK(MaxError(*code, p, 2 * k, sets) < 1e-9);
    }
  }
}

TEST_CASE("MdsCode: more than k results, any order", "[coding][mds]") {
  auto code = MdsCode::Systematic(8, 4);
  std::mt19937_64 rng(9);
  Matrix a = RandomMatrix(8, 3, rng);
  Matrix x = RandomMatrix(3, 2, rng);
  Products p = Make(*code, a, x);
  CHECK(MaxError(*code, p, 8, {{7, 6, 5, 4, 3, 2, 1, 0}, {7, 1, 5, 6, 4}, {2, 6, 5, 4, 7}}) < 1e-12);
  auto cond = code->DecodeConditionNumber({0, 1, 2, 3});
  REQUIRE(cond.ok());
  CHECK(*cond == 1.0);
  CHECK(code->DecodeConditionNumber({4, 5, 6, 7}).value() >= 1.0);
}

TEST_CASE("MdsCode: decode errors", "[coding][mds]") {
  auto code = MdsCode::Systematic(5, 3);
  std::mt19937_64 rng(11);
  Matrix a = RandomMatrix(6, 2, rng);
  Matrix x = RandomMatrix(2, 1, rng);
  Products p = Make(*code, a, x);
  auto decode = [&](std::vector<int> idx, int rows = 6) {
    std::vector<std::pair<int, Matrix>> res;
    for (int i : idx) res.emplace_back(i, p.prod[i < 0 || i >= 5 ? 0 : i]);
    return code->Decode(res, rows);
  };
  CHECK(decode({}).status().code() == Status::Code::kInvalidArgument);
  CHECK(decode({0, 4}).status().code() == Status::Code::kInvalidArgument);  // fewer than k
  CHECK(decode({0, 4, 4}).status().code() == Status::Code::kInvalidArgument);  // duplicate
  CHECK(decode({0, 4, 5}).status().code() == Status::Code::kInvalidArgument);  // out of range
  CHECK(decode({0, 4, -1}).status().code() == Status::Code::kInvalidArgument);
  CHECK(decode({0, 3, 4}, 7).status().code() == Status::Code::kInvalidArgument);  // block height 3
  CHECK(decode({0, 3, 4}, 5).ok());  // 5 rows -> block height 2 as well
  std::vector<std::pair<int, Matrix>> mixed = {{0, p.prod[0]}, {1, p.prod[1]}, {3, Matrix(2, 2)}};
  CHECK(code->Decode(mixed, 6).status().code() == Status::Code::kInvalidArgument);
  CHECK(code->DecodeConditionNumber({1, 2}).status().code() == Status::Code::kInvalidArgument);
}
