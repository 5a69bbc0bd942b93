// `clone`: Dolly (NSDI 2013): launch small jobs with extra clones of every
// task up front, the first finisher per task wins.
#pragma once

#include <memory>
#include <string>

#include "tailcut/common/config.h"
#include "tailcut/common/status.h"
#include "tailcut/core/policy.h"

namespace tailcut {

struct CloneOptions {
  uint32_t small_job_tasks = 10;  // jobs with at most this many tasks are cloned
  uint32_t copies = 1;            // extra clones per task (core caps at 8)
  // A job may claim at most this share of the copies the redundancy budget
  // allows at submission (tasks x copies <= share x CopiesAllowed()).
  double budget_share = 0.5;
  bool clone_coded = false;  // also k_of_n / quorum jobs
};
Status LoadCloneOptions(const Config& cfg, const std::string& prefix, CloneOptions* o);

class ClonePolicy final : public MitigationPolicy {
 public:
  explicit ClonePolicy(CloneOptions o = {}) : o_(o) {}
  std::string_view name() const override { return "clone"; }
  void OnJobSubmitted(const ClusterView& v, JobId job, std::vector<Proposal>* out) override;

 private:
  CloneOptions o_;
};

StatusOr<std::unique_ptr<MitigationPolicy>> MakeClonePolicy(const Config& cfg, const std::string& prefix);

}  // namespace tailcut
