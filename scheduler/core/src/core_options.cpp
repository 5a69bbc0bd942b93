// LoadCoreOptions: the [core] keys of a Config into CoreOptions.
#include "tailcut/core/scheduler_core.h"

#include <algorithm>

#include "placement_strategy.h"

namespace tailcut {
namespace {
bool IsPlacement(const std::string& name) {
  auto names = core::PlacementStrategyNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}
}  // namespace

Status LoadCoreOptions(const Config& cfg, std::string_view prefix, CoreOptions* o) {
  TableReader t(cfg, prefix);
  t.Get("lost_after_s", &o->lost_after_s)
      .Get("max_attempts", &o->max_attempts)
      .Get("infeasible_grace_s", &o->infeasible_grace_s)
      .Get("redundancy_budget", &o->redundancy_budget)
      .Get("min_copies", &o->min_copies)
      .Get("policy_interval_s", &o->policy_interval_s)
      .Get("pipeline_s", &o->pipeline_s)
      .Get("max_queue_per_slot", &o->max_queue_per_slot)
      .Get("job_retention", &o->job_retention)
      .Get("max_quarantined_share", &o->max_quarantined_share)
      .Get("task_timeout_s", &o->task_timeout_s)
      .Get("job_timeout_s", &o->job_timeout_s)
      .Get("count_executor_loss", &o->count_executor_loss)
      .Get("max_tasks_per_job", &o->max_tasks_per_job)
      .Get("max_queued_tasks", &o->max_queued_tasks)
      .Get("placement", &o->placement)
      .Get("quarantine_speed_factor", &o->quarantine_speed_factor)
      .Check(o->max_tasks_per_job >= 1 && o->max_tasks_per_job <= kTaskCountCeiling,
             "max_tasks_per_job must be in 1.." + std::to_string(kTaskCountCeiling))
      .Check(o->max_queued_tasks >= 1, "max_queued_tasks must be at least 1")
      .Check(o->task_timeout_s >= 0, "task_timeout_s must be >= 0 (0 = none)")
      .Check(o->job_timeout_s >= 0, "job_timeout_s must be >= 0 (0 = none)")
      .Check(o->lost_after_s >= 0, "lost_after_s must be >= 0 (0 = never)")
      .Check(o->max_attempts >= 1 && o->max_attempts <= kMaxAttemptsCeiling,
             "max_attempts must be in 1.." + std::to_string(kMaxAttemptsCeiling))
      .Check(o->max_queue_per_slot <= 4096, "max_queue_per_slot must be at most 4096")
      .Check(o->infeasible_grace_s >= 0, "infeasible_grace_s must be >= 0")
      .Check(o->redundancy_budget >= 0, "redundancy_budget must be >= 0")
      .Check(o->policy_interval_s > 0, "policy_interval_s must be > 0")
      .Check(o->pipeline_s >= 0, "pipeline_s must be >= 0")
      .Check(IsPlacement(o->placement), "placement must be one of: expected_finish, first_free")
      .Check(o->quarantine_speed_factor >= 1, "quarantine_speed_factor must be >= 1")
      .Check(o->max_quarantined_share >= 0 && o->max_quarantined_share <= 1, "max_quarantined_share must be in [0, 1]");
  return t.status();
}

}  // namespace tailcut
