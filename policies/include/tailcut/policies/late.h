// `late`: LATE (Zaharia et al., OSDI 2008): speculate the task with the
// longest estimated time left among slow tasks, never onto slow nodes,
// under a cap on speculative copies.
#pragma once

#include <memory>
#include <string>
#include <unordered_set>

#include "tailcut/common/config.h"
#include "tailcut/common/status.h"
#include "tailcut/core/policy.h"

namespace tailcut {

struct LateOptions {
  double slow_task_percentile = 0.25;  // candidates: rate below this percentile
  double slow_node_percentile = 0.25;  // nodes below this percentile get no copies
  double speculative_cap = 0.10;       // live copies <= cap x slots (at least 1)
  // Younger than min_runtime_ratio x the job's median committed run time
  // (when known) or min_runtime_s (a launch's round trip): not judged.
  double min_runtime_ratio = 1.0;
  double min_runtime_s = 0.001;
  // tailcut addition, so a healthy job is left alone: a candidate's rate must
  // also be below 1/min_slowdown of the median rate (and a slow node's score
  // below 1/min_slowdown of the median score).
  double min_slowdown = 1.5;
  bool speculate_coded = false;
};
Status LoadLateOptions(const Config& cfg, const std::string& prefix, LateOptions* o);

class LatePolicy final : public MitigationPolicy {
 public:
  explicit LatePolicy(LateOptions o = {});
  std::string_view name() const override { return "late"; }
  void OnTick(const ClusterView& v, std::vector<Proposal>* out) override;
  bool AvoidExecutor(const ClusterView& v, ExecutorId e) const override;

 private:
  LateOptions o_;
  std::unordered_set<ExecutorId> slow_nodes_;
};

StatusOr<std::unique_ptr<MitigationPolicy>> MakeLatePolicy(const Config& cfg, const std::string& prefix);

}  // namespace tailcut
