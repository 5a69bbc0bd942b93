// Coded jobs: build k_of_n JobDefs for MDS-coded matrix-vector multiply and
// gradient-coded rounds, run their kernels, and decode their results from
// any k committed outputs. See docs/POLICIES.md ("Coded jobs").
//
// Args / output formats (text, doubles printed with 17 significant digits so
// they round-trip exactly; whitespace-separated):
//   coded_matmul args:    "tcmm1 <block> <rows> <cols>" A-block (rows*cols, row-major) "<xlen>" x
//   gradient_worker args: "tcgw1 <worker> <dim> <parts>" then per partition:
//                         "<coeff> <rows>" X (rows*dim, row-major) y (rows), then w (dim)
//                         (least squares); "tcgw2 <loss> <worker> <dim> <parts>" ...
//                         with <loss> = lsq | logistic, otherwise identical
//   outputs (both):       "tcv1 <len>" values
// A coded_matmul task returns E_block x; a gradient_worker task returns
// sum_t coeff_t * grad_t over its partitions, with grad_t = X_t^T (X_t w - y_t)
// (least squares) or X_t^T (sigmoid(X_t w) - y_t) (logistic, y in {0,1}),
// and coeff_t = B(worker, partition_t) of the gradient code.
//
// The kernels are split into Parse* (args -> plain arrays) and Compute*
// (the CPU arithmetic) so the executor's GPU twins (docs/GPU.md) parse and
// encode exactly like the CPU path.
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
// Parsed coded_matmul args: a is rows x cols, row-major; x has cols values.
struct MatVecTask {
  int block = 0;
  long rows = 0, cols = 0;
  std::vector<double> a, x;
};
StatusOr<MatVecTask> ParseMatmulArgs(const std::string& args);
std::vector<double> ComputeMatVec(const MatVecTask& t);  // CPU: A x
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
// The model whose gradient a worker computes.
enum class Loss { kLeastSquares, kLogistic };
const char* LossName(Loss loss);  // "lsq", "logistic"
// Gradient of 0.5 * ||X w - y||^2: X^T (X w - y).
std::vector<double> LsqGradient(const LsqPartition& p, const std::vector<double>& w);
// Gradient of sum_i log(1 + e^{x_i w}) - y_i x_i w: X^T (sigmoid(X w) - y).
std::vector<double> LogisticGradient(const LsqPartition& p, const std::vector<double>& w);
// The loss itself (0.5 ||Xw - y||^2, or the logistic negative log-likelihood).
double PartitionLoss(Loss loss, const LsqPartition& p, const std::vector<double>& w);
std::string GradientArgs(int worker, const std::vector<double>& coeffs, const std::vector<const LsqPartition*>& parts,
                         const std::vector<double>& w, Loss loss = Loss::kLeastSquares);
// The gradient_worker kernel: args -> EncodeVector(coded gradient).
StatusOr<std::string> RunGradientKernel(const std::string& args);
// Parsed gradient_worker args.
struct GradientTask {
  Loss loss = Loss::kLeastSquares;
  int worker = 0;
  long dim = 0;
  std::vector<double> coeff;        // one per partition
  std::vector<LsqPartition> parts;
  std::vector<double> w;            // dim
};
StatusOr<GradientTask> ParseGradientArgs(const std::string& args);
std::vector<double> ComputeGradient(const GradientTask& t);  // CPU: sum_t coeff_t grad_t
// n = code.n() workers over n partitions, rule k_of_n with k = n - s.
StatusOr<JobDef> MakeGradientRoundJob(const coding::GradientCode& code, const std::vector<LsqPartition>& parts,
                                      const std::vector<double>& w, std::string name = "gradient-round",
                                      Loss loss = Loss::kLeastSquares);
// The same jobs for many rounds over fixed partitions (gradient descent):
// the partitions are encoded as text once, each Round(w) only appends w.
class GradientRoundJobs {
 public:
  static StatusOr<GradientRoundJobs> Create(const coding::GradientCode& code, const std::vector<LsqPartition>& parts,
                                            long dim, Loss loss = Loss::kLeastSquares);
  JobDef Round(const std::vector<double>& w, std::string name = "gradient-round") const;
  int n() const { return static_cast<int>(prefix_.size()); }

 private:
  std::vector<std::string> prefix_;  // args of worker i up to (without) w
  std::vector<double> rows_;         // input_size of worker i
  uint32_t k_ = 0;
};
// The full gradient sum_j g_j from the committed outputs of >= n - s workers.
StatusOr<std::vector<double>> DecodeGradientRound(const coding::GradientCode& code,
                                                  const std::vector<CommittedOutput>& outputs);

}  // namespace tailcut::coded
