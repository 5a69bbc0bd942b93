// `reassign`: move work off fail-slow executors (FALCON-style mitigation):
// quarantine them, copy their running attempts elsewhere, and take them
// back after a probation period (or when the predictor says recovered).
#pragma once

#include <memory>
#include <string>

#include "tailcut/common/config.h"
#include "tailcut/common/status.h"
#include "tailcut/core/policy.h"

namespace tailcut {

struct ReassignOptions {
  // Own estimate (see docs/POLICIES.md): an executor counts as slow when the
  // `quantile` of its last `window` slowdown samples is >= factor, i.e. most
  // of its recent work ran >= factor x typical, not just a few stragglers.
  double factor = 2.0;
  uint32_t min_samples = 16;     // finished attempts on the executor before judging
  uint32_t window = 16;          // recent samples judged
  double quantile = 0.25;        // low quantile: random stragglers cannot pass
  // Each sample is max(run, min_time_s) / max(typical, min_time_s): a task
  // of microseconds is not slow until it runs longer than this (as the
  // predictors' health.min_time_s; scheduling noise is not slowness).
  double min_time_s = 0.0001;
  double alpha = 0.3;            // EWMA weight of the newest slowdown sample (reports)
  double probation_s = 30;       // quarantined this long, then released on probation
  double max_probation_s = 600;  // probation doubles on each re-quarantine up to this
  // After a release, this many new samples before the executor is judged
  // again (its old samples are kept, so a still-slow node is caught at once).
  uint32_t probe_samples = 4;
  bool copy_running = true;   // move the executor's running attempts elsewhere
  bool use_predictor = true;  // also require PredictorSuite::Health == kFailSlow
  // Kill-and-restart (Mantri): an attempt with elapsed < (slowdown - 1) x
  // typical is expected to finish sooner restarted: launch it elsewhere and
  // cancel the original (or, with no free slot, cancel it: it is requeued).
  bool restart = true;
};
Status LoadReassignOptions(const Config& cfg, const std::string& prefix, ReassignOptions* o);

class ReassignPolicy final : public MitigationPolicy {
 public:
  explicit ReassignPolicy(ReassignOptions o = {});
  std::string_view name() const override { return "reassign"; }
  // Event-driven: an executor is judged when its evidence changes (an
  // attempt on it ended, its health changed); OnTick only looks at the
  // executors it quarantined (release, and copies a full cluster had no
  // room for before).
  void OnTick(const ClusterView& v, std::vector<Proposal>* out) override;
  void OnAttemptEnded(const ClusterView& v, const AttemptView& a, const AttemptEnd& end,
                      std::vector<Proposal>* out) override;
  void OnExecutorChanged(const ClusterView& v, ExecutorId e, ExecutorChange c, std::vector<Proposal>* out) override;

 private:
  void Judge(const ClusterView& v, ExecutorId e, std::vector<Proposal>* out);
  void CopyOff(const ClusterView& v, ExecutorId e, double slowdown, std::vector<Proposal>* out);
  struct State;
  ReassignOptions o_;
  std::shared_ptr<State> st_;
};

StatusOr<std::unique_ptr<MitigationPolicy>> MakeReassignPolicy(const Config& cfg, const std::string& prefix);

}  // namespace tailcut
