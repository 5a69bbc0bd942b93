#include "tailcut/sim/online_reference.h"

#include <limits>
#include <map>
#include <memory>

#include "tailcut/core/policy.h"

namespace tailcut::sim {
namespace {

// Acts on every attempt at one age, `after_s` of its class (the rule of
// online_reference.h). Event-driven: one wake-up per attempt.
class ThresholdPolicy final : public MitigationPolicy {
 public:
  explicit ThresholdPolicy(std::map<std::string, double, std::less<>> after_s) : after_s_(std::move(after_s)) {}
  std::string_view name() const override { return "online"; }

  void OnAttemptLaunched(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override {
    double after = After(v, a);
    if (after > 0) out->push_back(Proposal::WakeUp(a.attempt, a.queued + after));
  }

  void OnAttemptEnded(const ClusterView&, const AttemptView& a, const AttemptEnd& e, std::vector<Proposal>*) override {
    if (e.outcome == AttemptOutcome::kCommitted) acted_.erase({a.job, a.task});
  }

  void OnWakeUp(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override {
    if (a.task_live != 1) return;  // racing a copy already
    const double after = After(v, a);
    if (after <= 0) return;
    const Time since = a.started >= 0 ? a.started : a.queued;  // queued on the executor: wait for its start
    if (v.Now() < since + after) {
      out->push_back(Proposal::WakeUp(a.attempt, since + after));
      return;
    }
    // A task long by nature (bimodal's high mode) is long on every try:
    // without a cap, a low threshold would restart it for ever. 16 tries
    // leave every straggler-mixture task alone (0.35^16 < 1e-7 even for
    // Exp run times judged at 1.25x the median).
    if (++acted_[{a.job, a.task}] > kMaxActs) return;
    if (v.CopiesAllowed() > 0 && v.FreeSlots() > 0)
      out->push_back(Proposal::LaunchCopy(a.job, a.task, "online reference: copy"));
    else  // the core relaunches it at once, on the best free slot
      out->push_back(Proposal::CancelAttempt(a.attempt, "online reference: restart"));
  }

 private:
  double After(const ClusterView& v, const AttemptView& a) const {
    JobView j;
    if (!v.FindJob(a.job, &j) || !j.def || j.def->rule.kind != CompletionKind::kAll || a.task >= j.def->TaskCount())
      return 0;
    auto it = after_s_.find(j.def->Task(a.task).ClassName());
    return it == after_s_.end() ? 0 : it->second;
  }
  static constexpr uint32_t kMaxActs = 16;
  std::map<std::string, double, std::less<>> after_s_;
  std::map<std::pair<JobId, TaskIndex>, uint32_t> acted_;  // copies and restarts per task
};

}  // namespace

const std::vector<double>& OnlineReferenceRatios() {
  static const std::vector<double> r = {1.25, 1.5, 2, 2.5, 3, 4, 6, 10};
  return r;
}

StatusOr<OnlineReferenceResult> OnlineReference(const Scenario& scenario, uint64_t seed, const SimResult& none) {
  if (scenario.workload.arrival == WorkloadModel::Arrival::kTrace)
    return Status::InvalidArgument("online reference: a trace has no class distribution");
  if (scenario.cluster.edges.count > 0) return Status::InvalidArgument("online reference: not modelled on two tiers");
  OnlineReferenceResult best;
  best.result = none;
  best.ratio = 0;
  for (double ratio : OnlineReferenceRatios()) {
    std::map<std::string, double, std::less<>> after;
    for (const JobClass& c : scenario.workload.classes) after[c.name] = ratio * c.task_time.Median();
    PolicyChain chain;
    chain.push_back(std::make_unique<ThresholdPolicy>(std::move(after)));
    Simulator sim(scenario, std::move(chain), seed);
    SimResult r = sim.Run();
    if (r.unfinished == 0 && r.p99 < best.result.p99) {
      best.result = std::move(r);
      best.ratio = ratio;
    }
  }
  best.result.policy = "online";
  return best;
}

}  // namespace tailcut::sim
