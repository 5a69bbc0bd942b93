// Systematic real (n,k) MDS code for coded matrix-vector / matrix-matrix
// multiply (Lee et al., IEEE Trans. IT 2018). A is split into k row blocks
// A_0..A_{k-1}; worker i gets E_i = sum_j G(i,j) A_j for an n x k generator
// G whose top k x k part is the identity (blocks 0..k-1 are A's own row
// blocks) and whose bottom n-k "parity" rows are chosen for conditioning.
// Every k x k submatrix of G is nonsingular, so any k products E_i X decode
// A X. See docs/CODING.md for why the default parity is what it is.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "tailcut/coding/matrix.h"
#include "tailcut/common/status.h"

namespace tailcut::coding {

// How the n-k parity rows of the generator are built.
enum class MdsParity {
  // Entries iid N(0, 1/k) from a fixed-seed generator (portable Box-Muller
  // over std::mt19937_64, identical on every platform). MDS with
  // probability 1; construction checks nothing further. The default: it
  // measured the best worst-case decode conditioning (docs/CODING.md).
  kGaussian,
  // Cauchy rows C(i,j) = 1/(x_i - y_j) on interleaved nodes; every square
  // submatrix of a Cauchy matrix is nonsingular, so MDS is guaranteed.
  kCauchy,
  // Lagrange basis of k data nodes evaluated at n-k parity nodes, all nodes
  // Chebyshev points of [-1,1] (data and parity nodes interleaved), i.e. the
  // systematic form of a Vandermonde code. MDS is guaranteed.
  kChebyshevVandermonde,
};

class MdsCode {
 public:
  static constexpr std::uint64_t kDefaultSeed = 0x7a11c07ULL;

  // 1 <= k <= n (k == n is the uncoded split). InvalidArgument otherwise.
  static StatusOr<MdsCode> Systematic(int n, int k);
  static StatusOr<MdsCode> Systematic(int n, int k, MdsParity parity,
                                      std::uint64_t seed = kDefaultSeed);

  int n() const { return n_; }
  int k() const { return k_; }
  MdsParity parity() const { return parity_; }
  // n x k; rows 0..k-1 are the identity.
  const Matrix& generator() const { return g_; }

  // Rows per block for an A with `rows` rows: ceil(rows / k).
  int BlockRows(int rows) const { return (rows + k_ - 1) / k_; }

  // Splits A into k row blocks of BlockRows(A.rows()) rows (the last padded
  // with zero rows) and returns the n encoded blocks, systematic first.
  std::vector<Matrix> Encode(const Matrix& a) const;

  // `results` holds (block index, E_index * X) for at least k distinct
  // indices in [0, n), all the same shape; extra results beyond k are
  // ignored (systematic ones are preferred). Returns A X with
  // `original_rows` rows (the zero padding dropped).
  // InvalidArgument: fewer than k results, a duplicate or out-of-range
  // index, mismatched shapes, or original_rows inconsistent with the block
  // height. FailedPrecondition if the decode system is numerically singular.
  StatusOr<Matrix> Decode(const std::vector<std::pair<int, Matrix>>& results,
                          int original_rows) const;

  // 2-norm condition number of the linear system Decode solves when given
  // exactly these block indices (1.0 when all systematic blocks are there).
  StatusOr<double> DecodeConditionNumber(const std::vector<int>& indices) const;

 private:
  MdsCode(int n, int k, MdsParity parity, Matrix g)
      : n_(n), k_(k), parity_(parity), g_(std::move(g)) {}

  // Which parity indices Decode uses and which data blocks it recovers.
  struct Plan {
    std::vector<int> parity_used;    // |missing| parity block indices
    std::vector<int> missing_data;   // data block indices not received
  };
  StatusOr<Plan> MakePlan(const std::vector<int>& indices) const;

  int n_ = 0;
  int k_ = 0;
  MdsParity parity_ = MdsParity::kGaussian;
  Matrix g_;
};

}  // namespace tailcut::coding
