// Gradient coding (Tandon, Lei, Dimakis, Karampatziakis, ICML 2017).
// n workers, n data partitions, any s stragglers tolerated. Worker i
// computes the partial gradients g_j of the s+1 partitions in
// PartitionsOf(i) and sends one vector c_i = sum_j B(i,j) g_j. For every
// set F of at least n-s finished workers there is a with a^T B_F = 1^T, so
// sum_{i in F} a_i c_i = sum_j g_j, the full gradient.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "tailcut/coding/matrix.h"
#include "tailcut/common/status.h"

namespace tailcut::coding {

class GradientCode {
 public:
  enum class Kind { kFractionalRepetition, kCyclicRepetition };
  static constexpr std::uint64_t kDefaultSeed = 0x9c0deULL;
  static constexpr int kDefaultCandidates = 16;

  // Workers in groups of s+1; each group holds the same s+1 partitions and
  // sends their plain sum. Requires n >= 1, 0 <= s < n and (s+1) | n.
  // Decoding adds one survivor per group: exact, perfectly conditioned.
  static StatusOr<GradientCode> FractionalRepetition(int n, int s);

  // Row i supported on partitions i, i+1, ..., i+s (mod n). Tandon et al.
  // Algorithm 2: H is s x n Gaussian (fixed seed) with columns summing to
  // zero; B(i,i) = 1 and the other s entries of row i solve
  // H[:, i+1..i+s] x = -H[:, i], so every row lies in null(H), which has
  // dimension n-s and contains the all-ones vector; any n-s rows are
  // independent with probability 1 and so span it. Requires 0 <= s < n.
  // H is drawn for seeds seed, seed+1, ..., seed+candidates-1 and the B
  // with the smallest max |B(i,j)| is kept (a cheap conditioning proxy).
  // s == 0 gives B = I.
  static StatusOr<GradientCode> CyclicRepetition(int n, int s, std::uint64_t seed = kDefaultSeed,
                                                 int candidates = kDefaultCandidates);

  int n() const { return n_; }
  int s() const { return s_; }
  Kind kind() const { return kind_; }

  // n x n; B(i,j) is the coefficient worker i applies to partition j.
  const Matrix& encoding() const { return b_; }

  // The s+1 partitions worker `worker` computes, in the order Combine
  // expects its partial gradients; empty if `worker` is out of range.
  std::vector<int> PartitionsOf(int worker) const;

  // a of length n, indexed by worker, zero outside `finished_workers`, with
  // a^T B = 1^T (so only finished workers' coded gradients are needed).
  // Uses any n-s (or more) distinct finished workers. InvalidArgument when
  // fewer than n-s, or an index is duplicated / out of range. Cyclic codes:
  // the first n-s workers in ascending order are used and a is the least
  // squares (Householder QR) solution of B_F^T a = 1; FailedPrecondition /
  // Internal if that system is numerically singular / inconsistent.
  StatusOr<std::vector<double>> DecodingVector(const std::vector<int>& finished_workers) const;

  // The coded gradient worker `worker` sends: sum_t B(worker, p_t) *
  // partials[t] with p = PartitionsOf(worker). All partials have the same
  // length. InvalidArgument on a bad worker, count or length.
  StatusOr<std::vector<double>> Combine(int worker,
                                        const std::vector<std::vector<double>>& partials) const;

  // Full gradient sum_j g_j from (worker, coded gradient) pairs of at least
  // n-s distinct finished workers (same errors as DecodingVector, plus
  // InvalidArgument for vectors of different lengths).
  StatusOr<std::vector<double>> Decode(
      const std::vector<std::pair<int, std::vector<double>>>& coded) const;

 private:
  GradientCode(int n, int s, Kind kind, Matrix b) : n_(n), s_(s), kind_(kind), b_(std::move(b)) {}
  Status CheckWorkers(const std::vector<int>& workers) const;

  int n_ = 0;
  int s_ = 0;
  Kind kind_ = Kind::kFractionalRepetition;
  Matrix b_;
};

}  // namespace tailcut::coding
