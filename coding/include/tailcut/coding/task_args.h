// The coded tasks' argument codec: encode and parse the args of the
// coded_matmul and gradient_worker kernels, run them on the CPU, and encode /
// decode their outputs. Shared by the job builders (plugins/coded_jobs.h)
// and the executor, which links tailcut_coding only (no scheduler core).
// See docs/POLICIES.md ("Coded jobs").
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
#include <vector>

#include "tailcut/coding/matrix.h"
#include "tailcut/common/status.h"

namespace tailcut::coded {

inline constexpr const char* kMatmulKernel = "coded_matmul";
inline constexpr const char* kGradientKernel = "gradient_worker";

std::string EncodeVector(const std::vector<double>& v);
StatusOr<std::vector<double>> DecodeVector(const std::string& s);

// Appends " <v>" for each value (17 significant digits), as the args use.
void AppendReals(std::string* out, const std::vector<double>& v);

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

// ---- Speed-proportional data parallelism (docs/JOBS.md) -----------------
// gradient_worker share args, for divisible jobs whose units are data rows:
//   "tcgs1 <loss> <dim> <rows> <record_bytes>\n", then `rows` records of
//   exactly record_bytes bytes ("x_1 .. x_dim y", space-padded), then w (dim).
// The attempt's WorkShare picks rows [begin, begin + count) of total = rows;
// fixed-size records let the kernel parse only those, so its cost follows
// its share. The prefix (everything but w) of all rows of `parts`, in order:
std::string ShareGradientPrefix(const std::vector<LsqPartition>& parts, Loss loss = Loss::kLeastSquares);
bool IsShareGradientArgs(const std::string& args);
// One partition (coeff 1): the rows of the share. InvalidArgument when the
// args are malformed or the share does not fit them (total != rows).
StatusOr<GradientTask> ParseShareGradientArgs(const std::string& args, uint64_t begin, uint64_t count,
                                              uint64_t total);
}  // namespace tailcut::coded
