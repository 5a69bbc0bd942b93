// `predictive`: act on predictions (Wrangler / NURD style): keep new work
// off executors predicted slow, and speculate early on attempts likely to
// straggle. Without a PredictorSuite it falls back to its own per-executor
// slowdown estimate and to the spark rule with a lower multiplier.
#pragma once

#include <memory>
#include <string>
#include <unordered_set>

#include "tailcut/common/config.h"
#include "tailcut/common/status.h"
#include "tailcut/core/policy.h"
#include "tailcut/policies/spark.h"
#include "tailcut/predictors/predictor.h"

namespace tailcut {

struct PredictiveOptions {
  double speed_threshold = 1.5;  // avoid executors with speed factor >= this
  double p_straggler = 0.7;      // speculate when P(straggler) >= this
  // Wait, copy or kill-and-restart by expected cost (policies/src/mitigation_cost.h,
  // docs/POLICIES.md): restart when P(straggler) >= restart_p and the
  // expected time left is >= restart_ratio x a fresh attempt's typical time
  // (Mantri), slot free or not; at most 3 restarts per task.
  bool restart = true;
  double restart_p = 0.9;
  double restart_ratio = 2.0;
  // Do no harm: a copy only when the expected time left is >= copy_ratio x
  // a fresh attempt's typical time (it is then expected to finish first).
  double copy_ratio = 0.5;
  // First judged at min_runtime_ratio x a fresh attempt's predicted median
  // run time, and never before min_runtime_s: the floor stands for a launch's
  // round trip (below it a copy cannot start sooner than the attempt ends),
  // not for a task scale. Without a prediction: at the floor, then at
  // doubling ages until the suite knows the task.
  double min_runtime_ratio = 0.25;
  double min_runtime_s = 0.001;
  uint32_t min_samples = 3;  // own estimate: finished attempts per executor
  // Fallback without predictors: spark with these values.
  double fallback_quantile = 0.5;
  double fallback_multiplier = 1.5;
  bool speculate_coded = false;
};
Status LoadPredictiveOptions(const Config& cfg, const std::string& prefix, PredictiveOptions* o);

class PredictivePolicy final : public MitigationPolicy {
 public:
  explicit PredictivePolicy(PredictiveOptions o = {});
  std::string_view name() const override { return "predictive"; }
  // Event-driven: each attempt is judged when it may first be judged, when
  // it reports progress, and again when its P(straggler) is predicted to
  // reach p_straggler (a wake-up), so a straggler is caught at the
  // threshold at O(log) cost per attempt. OnTick only retries stragglers
  // that found no room for a copy and drops hopeless copies (with restart).
  void OnTick(const ClusterView& v, std::vector<Proposal>* out) override;
  void OnAttemptLaunched(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override;
  void OnAttemptStarted(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override;
  void OnAttemptProgress(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override;
  void OnAttemptEnded(const ClusterView& v, const AttemptView& a, const AttemptEnd& end,
                      std::vector<Proposal>* out) override;
  void OnExecutorChanged(const ClusterView& v, ExecutorId e, ExecutorChange c, std::vector<Proposal>* out) override;
  void OnWakeUp(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override;
  bool AvoidExecutor(const ClusterView& v, ExecutorId e) const override;

 private:
  double JudgeAge(const PredictorSuite& pred, const TaskDef& d) const;
  void Judge(const ClusterView& v, const AttemptView& a, bool rearm, std::vector<Proposal>* out);
  bool Act(const ClusterView& v, const AttemptView& a, const TaskDef& d, const StragglerEstimate& est, bool slot_free,
           std::vector<Proposal>* out);
  void DropHopelessCopies(const ClusterView& v, std::vector<Proposal>* out);
  struct State;
  PredictiveOptions o_;
  std::shared_ptr<State> st_;
};

StatusOr<std::unique_ptr<MitigationPolicy>> MakePredictivePolicy(const Config& cfg, const std::string& prefix);

}  // namespace tailcut
