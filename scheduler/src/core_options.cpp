// LoadCoreOptions: the [core] keys of a Config into CoreOptions.
#include "tailcut/scheduler/core.h"

namespace tailcut {

Status LoadCoreOptions(const Config& cfg, std::string_view prefix, CoreOptions* o) {
  std::string p = prefix.empty() ? "" : std::string(prefix) + ".";
  for (Status s : {cfg.Get(p + "lost_after_s", &o->lost_after_s), cfg.Get(p + "max_attempts", &o->max_attempts),
                   cfg.Get(p + "infeasible_grace_s", &o->infeasible_grace_s),
                   cfg.Get(p + "redundancy_budget", &o->redundancy_budget), cfg.Get(p + "min_copies", &o->min_copies),
                   cfg.Get(p + "policy_interval_s", &o->policy_interval_s), cfg.Get(p + "pipeline_s", &o->pipeline_s),
                   cfg.Get(p + "max_queue_per_slot", &o->max_queue_per_slot),
                   cfg.Get(p + "job_retention", &o->job_retention),
                   cfg.Get(p + "max_quarantined_share", &o->max_quarantined_share)}) {
    if (!s.ok()) return s;
  }
  if (o->max_attempts == 0) return Status::InvalidArgument(p + "max_attempts must be at least 1");
  if (o->redundancy_budget < 0) return Status::InvalidArgument(p + "redundancy_budget must be >= 0");
  if (o->policy_interval_s <= 0) return Status::InvalidArgument(p + "policy_interval_s must be > 0");
  return Status::Ok();
}

}  // namespace tailcut
