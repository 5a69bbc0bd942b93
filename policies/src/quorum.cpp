#include "tailcut/policies/quorum.h"

#include <cmath>
#include <map>
#include <unordered_set>

#include "policy_util.h"

namespace tailcut {

StatusOr<JobDef> MakeQuorumJob(const QuorumSpec& s) {
  if (s.target == 0) return Status::InvalidArgument("quorum job: target must be >= 1");
  if (!(s.over_select >= 1)) return Status::InvalidArgument("quorum job: over_select must be >= 1");
  if (s.min_count > s.target) return Status::InvalidArgument("quorum job: min_count must be <= target");
  if (s.deadline_s < 0) return Status::InvalidArgument("quorum job: deadline_s must be >= 0");
  if (s.client.kernel.empty()) return Status::InvalidArgument("quorum job: client task has no kernel");
  JobDef j;
  j.name = s.name;
  j.templ = s.client;
  // 1e-9 keeps 1.3 x 10 at 13 despite floating point.
  j.template_count = static_cast<uint32_t>(std::ceil(s.over_select * s.target - 1e-9));
  j.template_count = std::max(j.template_count, s.target);
  j.rule.kind = CompletionKind::kQuorum;
  j.rule.k = s.target;
  j.rule.min_count = s.min_count == 0 ? s.target : s.min_count;
  j.rule.deadline_s = s.deadline_s;
  j.return_outputs = s.return_outputs;
  return j;
}

void QuorumPolicy::OnTick(const ClusterView& v, std::vector<Proposal>* out) {
  if (o_.allow_copies) return;
  std::unordered_set<JobId> quorum;
  v.ForEachJob([&](const JobView& j) {
    if (j.def && j.def->rule.kind == CompletionKind::kQuorum && j.copies > 0) quorum.insert(j.id);
  });
  if (quorum.empty()) return;
  std::map<std::pair<JobId, TaskIndex>, uint32_t> cancelled;
  v.ForEachRunningAttempt([&](const AttemptView& a) {
    if (!a.copy || !quorum.count(a.job)) return;
    // Keep one attempt per task alive, so cancelling never requeues.
    uint32_t& n = cancelled[{a.job, a.task}];
    if (n + 1 >= a.task_live) return;
    ++n;
    out->push_back(Proposal::CancelAttempt(a.attempt, "quorum: over-selection is the redundancy"));
  });
}

StatusOr<std::unique_ptr<MitigationPolicy>> MakeQuorumPolicy(const Config& cfg, const std::string& prefix) {
  QuorumOptions o;
  TableReader p(cfg, prefix);
  p.Get("allow_copies", &o.allow_copies);
  if (!p.status().ok()) return p.status();
  return std::unique_ptr<MitigationPolicy>(std::make_unique<QuorumPolicy>(o));
}

}  // namespace tailcut
