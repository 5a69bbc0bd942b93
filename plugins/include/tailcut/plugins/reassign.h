// `reassign`: move work off fail-slow executors (FALCON-style mitigation):
// quarantine them, copy their running attempts elsewhere, and take them
// back after a probation period (or when the predictor says recovered).
#pragma once

#include <memory>
#include <string>

#include "tailcut/common/config.h"
#include "tailcut/common/status.h"
#include "tailcut/scheduler/policy.h"

namespace tailcut {

struct ReassignOptions {
  double factor = 2.0;         // own estimate: slowdown >= factor is fail-slow
  uint32_t min_samples = 3;    // finished attempts on the executor before judging
  double alpha = 0.3;          // EWMA weight of the newest slowdown sample
  double probation_s = 30;     // quarantined this long, then released on probation
  double max_probation_s = 240;  // probation doubles on each re-quarantine up to this
  bool copy_running = true;    // launch copies of the executor's running attempts
  bool use_predictor = true;   // trust PredictorSuite::Health when available
  // With no free slot for a copy: cancel (requeue elsewhere) attempts that
  // would finish sooner restarted, elapsed < (slowdown - 1) x median.
  bool restart = true;
};
Status LoadReassignOptions(const Config& cfg, const std::string& prefix, ReassignOptions* o);

class ReassignPolicy final : public MitigationPolicy {
 public:
  explicit ReassignPolicy(ReassignOptions o = {});
  std::string_view name() const override { return "reassign"; }
  void OnTick(const ClusterView& v, std::vector<Proposal>* out) override;

 private:
  struct State;
  ReassignOptions o_;
  std::shared_ptr<State> st_;
};

StatusOr<std::unique_ptr<MitigationPolicy>> MakeReassignPolicy(const Config& cfg, const std::string& prefix);

}  // namespace tailcut
