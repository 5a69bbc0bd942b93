// `coded` and `gradient_code`: the policies for k_of_n (coded) jobs.
//
// Coding already is the redundancy of such a job: n tasks run, any k
// commits finish it, the rest are cancelled. So the speculative policies
// (spark, late, hedge, predictive, clone, reassign's copies) leave k_of_n
// jobs alone, and these policies take over only when the code's slack is
// used up: when the tasks that can still commit (committed + running +
// not yet launched) are no more than k, every straggler now delays the job,
// and a straggling task (elapsed > multiplier x the job's median committed
// run time, and > min_runtime_s) gets one copy, like spark would.
//
// `coded` watches jobs whose tasks run `kernel` (default coded_matmul);
// `gradient_code` those running gradient_worker; kernel "*" = any k_of_n job.
#pragma once

#include <memory>
#include <string>

#include "tailcut/common/config.h"
#include "tailcut/common/status.h"
#include "tailcut/core/policy.h"

namespace tailcut {

struct CodedOptions {
  std::string kernel = "coded_matmul";
  double multiplier = 2.0;
  double min_runtime_s = 0.001;  // floor: a launch's round trip, not a task scale
};
Status LoadCodedOptions(const Config& cfg, const std::string& prefix, CodedOptions* o);

class CodedJobPolicy final : public MitigationPolicy {
 public:
  CodedJobPolicy(std::string name, CodedOptions o);
  std::string_view name() const override { return name_; }
  void OnTick(const ClusterView& v, std::vector<Proposal>* out) override;

 private:
  std::string name_;
  CodedOptions o_;
};

StatusOr<std::unique_ptr<MitigationPolicy>> MakeCodedPolicy(const Config& cfg, const std::string& prefix);
StatusOr<std::unique_ptr<MitigationPolicy>> MakeGradientCodePolicy(const Config& cfg, const std::string& prefix);

}  // namespace tailcut
