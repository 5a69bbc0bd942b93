// Coded jobs: build k_of_n JobDefs for MDS-coded matrix-vector multiply and
// gradient-coded rounds, run their kernels, and decode their results from
// any k committed outputs. See docs/POLICIES.md ("Coded jobs").
//
// Args / output formats (text, doubles printed with 17 significant digits so
// they round-trip exactly; whitespace-separated):
//   coded_matmul args:    "tcmm1 <block> <rows> <cols>" A-block (rows*cols, row-major) "<xlen>" x
//   gradient_worker args: "tcgw1 <worker> <dim> <parts>" then per partition:
//                         "<coeff> <rows>" X (rows*dim, row-major) y (rows), then w (dim)
//   outputs (both):       "tcv1 <len>" values
// A coded_matmul task returns E_block x; a gradient_worker task returns
// sum_t coeff_t * X_t^T (X_t w - y_t) over its partitions (least squares),
// with coeff_t = B(worker, partition_t) of the gradient code.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tailcut/coding/gradient_code.h"
#include "tailcut/coding/matrix.h"
#include "tailcut/coding/mds_code.h"
#include "tailcut/common/status.h"
#include "tailcut/scheduler/core.h"
#include "tailcut/scheduler/job.h"

namespace tailcut::coded {

inline constexpr const char* kMatmulKernel = "coded_matmul";
inline constexpr const char* kGradientKernel = "gradient_worker";

std::string EncodeVector(const std::vector<double>& v);
StatusOr<std::vector<double>> DecodeVector(const std::string& s);

// ---- MDS-coded matrix-vector multiply -----------------------------------
std::string MatmulArgs(int block, const coding::Matrix& a_block, const std::vector<double>& x);
// The coded_matmul kernel: args -> EncodeVector(A_block x).
StatusOr<std::string> RunMatmulKernel(const std::string& args);
// n tasks (one per encoded block of A), rule k_of_n with k = code.k(),
// return_outputs set. InvalidArgument when x.size() != a.cols().
StatusOr<JobDef> MakeCodedMatVecJob(const coding::MdsCode& code, const coding::Matrix& a,
                                    const std::vector<double>& x, std::string name = "coded-matvec");
// A x (a.rows() = original_rows values) from any >= k committed outputs.
StatusOr<std::vector<double>> DecodeCodedMatVec(const coding::MdsCode& code, int original_rows,
                                                const std::vector<CommittedOutput>& outputs);

// ---- Gradient-coded round -------------------------------------------------
// One data partition of a least-squares problem: rows of X and targets y.
struct LsqPartition {
  coding::Matrix x;       // rows x dim
  std::vector<double> y;  // rows
};
// Gradient of 0.5 * ||X w - y||^2: X^T (X w - y).
std::vector<double> LsqGradient(const LsqPartition& p, const std::vector<double>& w);
std::string GradientArgs(int worker, const std::vector<double>& coeffs, const std::vector<const LsqPartition*>& parts,
                         const std::vector<double>& w);
// The gradient_worker kernel: args -> EncodeVector(coded gradient).
StatusOr<std::string> RunGradientKernel(const std::string& args);
// n = code.n() workers over n partitions, rule k_of_n with k = n - s.
StatusOr<JobDef> MakeGradientRoundJob(const coding::GradientCode& code, const std::vector<LsqPartition>& parts,
                                      const std::vector<double>& w, std::string name = "gradient-round");
// The full gradient sum_j g_j from the committed outputs of >= n - s workers.
StatusOr<std::vector<double>> DecodeGradientRound(const coding::GradientCode& code,
                                                  const std::vector<CommittedOutput>& outputs);

}  // namespace tailcut::coded
