#include "tailcut/policies/clone.h"

#include <cmath>

#include "policy_util.h"

namespace tailcut {

using namespace policy_util;

Status LoadCloneOptions(const Config& cfg, const std::string& prefix, CloneOptions* o) {
  TableReader p(cfg, prefix);
  p.Get("small_job_tasks", &o->small_job_tasks)
      .Get("copies", &o->copies)
      .Get("budget_share", &o->budget_share)
      .Get("clone_coded", &o->clone_coded)
      .Check(o->copies >= 1 && o->copies <= 8, "copies must be in [1, 8]")
      .Check(o->budget_share > 0 && o->budget_share <= 1, "budget_share must be in (0, 1]");
  return p.status();
}

void ClonePolicy::OnJobSubmitted(const ClusterView& v, JobId job, std::vector<Proposal>* out) {
  JobView j;
  if (!v.FindJob(job, &j) || j.tasks > o_.small_job_tasks) return;
  if (!o_.clone_coded && !PlainJob(j)) return;
  // Clone as many copies per task as the budget share affords (at least 1 if any).
  double afford = o_.budget_share * v.CopiesAllowed();
  uint32_t copies = o_.copies;
  while (copies > 0 && static_cast<double>(j.tasks) * copies > std::max(afford, 1.0)) --copies;
  if (copies == 0) return;
  out->push_back(Proposal::CloneAtLaunch(job, copies, "clone: small job (" + std::to_string(j.tasks) + " tasks)"));
}

StatusOr<std::unique_ptr<MitigationPolicy>> MakeClonePolicy(const Config& cfg, const std::string& prefix) {
  CloneOptions o;
  if (Status s = LoadCloneOptions(cfg, prefix, &o); !s.ok()) return s;
  return std::unique_ptr<MitigationPolicy>(std::make_unique<ClonePolicy>(o));
}

}  // namespace tailcut
