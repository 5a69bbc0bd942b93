// Coded jobs: build k_of_n JobDefs for MDS-coded matrix-vector multiply and
// gradient-coded rounds, and decode their results from any k committed
// outputs. See docs/POLICIES.md ("Coded jobs"). The tasks' args / output
// formats and the kernels themselves are tailcut/coding/task_args.h.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tailcut/coding/gradient_code.h"
#include "tailcut/coding/matrix.h"
#include "tailcut/coding/mds_code.h"
#include "tailcut/coding/task_args.h"
#include "tailcut/common/status.h"
#include "tailcut/core/job.h"
#include "tailcut/core/scheduler_core.h"

namespace tailcut::coded {

// ---- MDS-coded matrix-vector multiply -----------------------------------
// n tasks (one per encoded block of A), rule k_of_n with k = code.k(),
// return_outputs set. InvalidArgument when x.size() != a.cols().
StatusOr<JobDef> MakeCodedMatVecJob(const coding::MdsCode& code, const coding::Matrix& a, const std::vector<double>& x,
                                    std::string name = "coded-matvec");
// A x (a.rows() = original_rows values) from any >= k committed outputs.
StatusOr<std::vector<double>> DecodeCodedMatVec(const coding::MdsCode& code, int original_rows,
                                                const std::vector<CommittedOutput>& outputs);

// ---- Gradient-coded round -------------------------------------------------
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
