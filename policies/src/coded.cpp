#include "tailcut/policies/coded.h"

#include <unordered_map>
#include <unordered_set>

#include "policy_util.h"

namespace tailcut {

using namespace policy_util;

Status LoadCodedOptions(const Config& cfg, const std::string& prefix, CodedOptions* o) {
  TableReader p(cfg, prefix);
  p.Get("kernel", &o->kernel)
      .Get("multiplier", &o->multiplier)
      .Get("min_runtime_s", &o->min_runtime_s)
      .Check(!o->kernel.empty(), "kernel must not be empty (\"*\" = any)")
      .Check(o->multiplier >= 1, "multiplier must be >= 1")
      .Check(o->min_runtime_s >= 0, "min_runtime_s must be >= 0");
  return p.status();
}

CodedJobPolicy::CodedJobPolicy(std::string name, CodedOptions o) : name_(std::move(name)), o_(std::move(o)) {}

void CodedJobPolicy::OnTick(const ClusterView& v, std::vector<Proposal>* out) {
  std::unordered_map<JobId, JobView> mine;
  v.ForEachJob([&](const JobView& j) {
    if (!j.def || j.def->rule.kind != CompletionKind::kKOfN) return;
    if (o_.kernel != "*" && j.def->Task(0).kernel != o_.kernel) return;
    mine[j.id] = j;
  });
  if (mine.empty() || v.CopiesAllowed() == 0) return;
  // Tasks with a live attempt, per job.
  std::unordered_map<JobId, std::unordered_set<TaskIndex>> live;
  v.ForEachRunningAttempt([&](const AttemptView& a) {
    if (mine.count(a.job)) live[a.job].insert(a.task);
  });
  uint32_t allowed = v.CopiesAllowed();
  v.ForEachRunningAttempt([&](const AttemptView& a) {
    auto it = mine.find(a.job);
    if (it == mine.end() || a.task_live != 1 || allowed == 0) return;
    const JobView& j = it->second;
    uint64_t can_commit = uint64_t{j.committed} + live[a.job].size() + j.unlaunched;
    if (can_commit > j.needed) return;  // the code still has slack
    double median = v.MedianRunTime(a.job);
    if (median <= 0) return;
    double el = Elapsed(v, a);
    if (el <= std::max(o_.multiplier * median, o_.min_runtime_s)) return;
    --allowed;
    out->push_back(Proposal::LaunchCopy(a.job, a.task, name_ + ": code slack used up, task straggles"));
  });
}

StatusOr<std::unique_ptr<MitigationPolicy>> MakeCodedPolicy(const Config& cfg, const std::string& prefix) {
  CodedOptions o;
  if (Status s = LoadCodedOptions(cfg, prefix, &o); !s.ok()) return s;
  return std::unique_ptr<MitigationPolicy>(std::make_unique<CodedJobPolicy>("coded", o));
}

StatusOr<std::unique_ptr<MitigationPolicy>> MakeGradientCodePolicy(const Config& cfg, const std::string& prefix) {
  CodedOptions o;
  o.kernel = "gradient_worker";
  if (Status s = LoadCodedOptions(cfg, prefix, &o); !s.ok()) return s;
  return std::unique_ptr<MitigationPolicy>(std::make_unique<CodedJobPolicy>("gradient_code", o));
}

}  // namespace tailcut
