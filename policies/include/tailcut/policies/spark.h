// `spark`: Spark 4 speculative execution (TaskSetManager.checkSpeculatableTasks).
#pragma once

#include <memory>
#include <string>

#include "tailcut/common/config.h"
#include "tailcut/common/status.h"
#include "tailcut/core/policy.h"

namespace tailcut {

struct SparkOptions {
  double quantile = 0.9;         // share of tasks committed before speculating
  double multiplier = 3.0;       // copy when elapsed > multiplier x median
  double min_runtime_s = 0.001;  // ... and elapsed > this (floor: a launch's round trip)
  // Absolute threshold (spark.speculation.task.duration.threshold) for jobs
  // with fewer than min_tasks_for_quantile tasks or before the quantile is
  // reached; 0 = off.
  double task_duration_threshold_s = 0;
  uint32_t min_tasks_for_quantile = 1;
  // Efficiency filter: with input sizes, copy only tasks whose input/elapsed
  // rate is below efficiency x the job's average rate, or whose elapsed is
  // beyond 2 x the threshold; 0 = off.
  double efficiency = 0.75;
  bool speculate_coded = false;  // also k_of_n / quorum jobs
};
Status LoadSparkOptions(const Config& cfg, const std::string& prefix, SparkOptions* o);

class SparkPolicy final : public MitigationPolicy {
 public:
  explicit SparkPolicy(SparkOptions o = {}, std::string name = "spark");
  std::string_view name() const override { return name_; }
  void OnTick(const ClusterView& v, std::vector<Proposal>* out) override;

 private:
  struct State;
  SparkOptions o_;
  std::string name_;
  std::shared_ptr<State> st_;
};

StatusOr<std::unique_ptr<MitigationPolicy>> MakeSparkPolicy(const Config& cfg, const std::string& prefix);

}  // namespace tailcut
