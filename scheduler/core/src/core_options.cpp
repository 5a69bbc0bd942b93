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
      .Get("policy_interval_ratio", &o->policy_interval_ratio)
      .Get("policy_interval_min_s", &o->policy_interval_min_s)
      .Get("policy_interval_max_s", &o->policy_interval_max_s)
      .Get("pipeline_s", &o->pipeline_s)
      .Get("max_queue_per_slot", &o->max_queue_per_slot)
      .Get("job_retention", &o->job_retention)
      .Get("max_quarantined_share", &o->max_quarantined_share)
      .Get("task_timeout_s", &o->task_timeout_s)
      .Get("job_timeout_s", &o->job_timeout_s)
      .Get("attempt_timeout_ratio", &o->attempt_timeout_ratio)
      .Get("attempt_timeout_floor_s", &o->attempt_timeout_floor_s)
      .Get("attempt_start_floor_s", &o->attempt_start_floor_s)
      .Get("attempt_timeout_ceiling_s", &o->attempt_timeout_ceiling_s)
      .Get("unresponsive_after_timeouts", &o->unresponsive_after_timeouts)
      .Get("rest_after_refusals", &o->rest_after_refusals)
      .Get("rest_s", &o->rest_s)
      .Get("max_rest_s", &o->max_rest_s)
      .Get("count_executor_loss", &o->count_executor_loss)
      .Get("max_tasks_per_job", &o->max_tasks_per_job)
      .Get("max_queued_tasks", &o->max_queued_tasks)
      .Get("placement", &o->placement)
      .Get("copies_yield_to", &o->copies_yield_to)
      .Get("quarantine_speed_factor", &o->quarantine_speed_factor)
      .Check(o->max_tasks_per_job >= 1 && o->max_tasks_per_job <= kTaskCountCeiling,
             "max_tasks_per_job must be in 1.." + std::to_string(kTaskCountCeiling))
      .Check(o->max_queued_tasks >= 1, "max_queued_tasks must be at least 1")
      .Check(o->job_retention >= 1,
             "job_retention must be at least 1: with 0 a client polling its own job that just finished gets "
             "UNKNOWN_JOB")
      .Check(o->task_timeout_s >= 0, "task_timeout_s must be >= 0 (0 = none)")
      .Check(o->job_timeout_s >= 0, "job_timeout_s must be >= 0 (0 = none)")
      .Check(o->attempt_timeout_ratio >= 0, "attempt_timeout_ratio must be >= 0 (0 = no default limit)")
      .Check(o->attempt_timeout_floor_s > 0, "attempt_timeout_floor_s must be > 0")
      .Check(o->attempt_start_floor_s > 0, "attempt_start_floor_s must be > 0")
      .Check(o->attempt_timeout_ceiling_s >= o->attempt_timeout_floor_s,
             "attempt_timeout_ceiling_s must be >= attempt_timeout_floor_s")
      .Check(o->lost_after_s >= 0, "lost_after_s must be >= 0 (0 = never)")
      .Check(o->max_attempts >= 1 && o->max_attempts <= kMaxAttemptsCeiling,
             "max_attempts must be in 1.." + std::to_string(kMaxAttemptsCeiling))
      .Check(o->max_queue_per_slot <= 4096, "max_queue_per_slot must be at most 4096")
      .Check(o->infeasible_grace_s >= 0, "infeasible_grace_s must be >= 0")
      .Check(o->redundancy_budget >= 0, "redundancy_budget must be >= 0")
      .Check(o->policy_interval_s > 0, "policy_interval_s must be > 0")
      .Check(o->policy_interval_ratio >= 0, "policy_interval_ratio must be >= 0")
      .Check(o->policy_interval_min_s > 0, "policy_interval_min_s must be > 0")
      .Check(o->policy_interval_max_s >= o->policy_interval_min_s,
             "policy_interval_max_s must be >= policy_interval_min_s")
      .Check(o->pipeline_s >= 0, "pipeline_s must be >= 0")
      .Check(IsPlacement(o->placement), "placement must be one of: expected_finish, first_free")
      .Check(o->copies_yield_to == "owner" || o->copies_yield_to == "job", "copies_yield_to must be owner or job")
      .Check(o->rest_s > 0 && o->rest_s <= 3600, "rest_s must be in (0, 3600]")
      .Check(o->max_rest_s >= o->rest_s && o->max_rest_s <= 3600, "max_rest_s must be in [rest_s, 3600]")
      .Check(o->quarantine_speed_factor >= 1, "quarantine_speed_factor must be >= 1")
      .Check(o->max_quarantined_share >= 0 && o->max_quarantined_share <= 1, "max_quarantined_share must be in [0, 1]");
  return t.status();
}

}  // namespace tailcut
