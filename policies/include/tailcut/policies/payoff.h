// `payoff`: speculation that pays for itself (issue 31; docs/POLICIES.md,
// "The payoff controller"). A wrapper around a chain: the inner policies
// propose clones, copies and restarts as usual, and for every candidate the
// controller decides, per arm (task class x kind x proposing policy),
// whether to let it through. It keeps a small randomized control group of
// candidates it leaves alone and compares, online, what a candidate's task
// took from the decision to its commit with and without the action, the
// action charged with the slot time it took while other work waited. An arm
// that pays is acted on (a 1% holdout keeps measuring), one that does not
// falls back to `none` (a 2% exploration notices when the shape changes).
// Quarantine, releases and placement advice pass through untouched.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tailcut/common/config.h"
#include "tailcut/common/status.h"
#include "tailcut/core/policy.h"
#include "tailcut/policies/inner_wake_ups.h"

namespace tailcut {

struct PayoffOptions {
  bool enabled = true;     // false: the inner chain's proposals pass as they are
  uint32_t warmup = 4;     // samples of each group before an arm is judged
  double control = 0.002;  // share held back while an arm pays
  double explore = 0.02;   // share acted on while it does not
  double z = 2.0;          // an arm pays (or not) when its gain is z standard errors from 0
  double memory = 64;      // samples of an arm that count (exponential forgetting)
  uint64_t seed = 1;       // of the controller's coin
};
Status LoadPayoffOptions(const Config& cfg, const std::string& prefix, PayoffOptions* o);

// The accounting, self-contained (tests/policies/payoff_test.cpp): per arm,
// the decayed count, mean and variance of the outcome (time from decision
// to commit, cost included) of the treated and of the control candidates.
class PayoffLedger {
 public:
  struct Group {
    double n = 0, sum = 0, sq = 0;  // decayed count, sum and sum of squares
    double Mean() const { return n > 0 ? sum / n : 0; }
    double Var() const { return n > 1 ? std::max(0.0, sq / n - Mean() * Mean()) * n / (n - 1) : 0; }
  };
  struct Arm {
    Group treated, control;
    uint64_t decisions = 0, acted = 0;
    uint64_t pending = 0;  // treated decisions whose outcome has not come yet
    // Outcomes are relative to a prediction of what the candidate would
    // have taken untouched: the control group then only calibrates it (its
    // mean is taken as 0 until it has `warmup` samples), so the arm is
    // judged from its treated samples alone at first.
    bool relative = false;
  };
  enum class Verdict { kWarmup, kPays, kUnsure, kCosts };

  // `uniform`: the coin, in [0, 1) (injected: tests pass their own).
  PayoffLedger(const PayoffOptions& o, std::function<double()> uniform) : o_(o), uniform_(std::move(uniform)) {}
  // Whether to act on one more candidate of `arm` (`relative`: see Arm).
  bool Decide(const std::string& arm, bool relative);
  // A candidate's outcome: seconds from the decision to its commit plus,
  // when treated, the cost (slot seconds taken while other work waited),
  // less the prediction for relative arms.
  void Outcome(const std::string& arm, bool treated, double seconds);
  Verdict Judge(const std::string& arm) const;
  // Estimated seconds an action saves (control mean - treated mean); 0 unknown.
  double Gain(const std::string& arm) const;
  const std::map<std::string, Arm, std::less<>>& arms() const { return arms_; }

 private:
  PayoffOptions o_;
  std::function<double()> uniform_;
  std::map<std::string, Arm, std::less<>> arms_;
};

class PayoffPolicy final : public MitigationPolicy {
 public:
  PayoffPolicy(PayoffOptions o, PolicyChain inner, std::function<double()> uniform = {});
  std::string_view name() const override { return "payoff"; }
  const PolicyChain& inner() const { return inner_; }
  const PayoffLedger& ledger() const { return ledger_; }

  void OnJobSubmitted(const ClusterView& v, JobId job, std::vector<Proposal>* out) override;
  void OnTick(const ClusterView& v, std::vector<Proposal>* out) override;
  void OnAttemptLaunched(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override;
  void OnAttemptStarted(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override;
  void OnAttemptProgress(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override;
  void OnAttemptEnded(const ClusterView& v, const AttemptView& a, const AttemptEnd& e,
                      std::vector<Proposal>* out) override;
  void OnExecutorChanged(const ClusterView& v, ExecutorId e, ExecutorChange c, std::vector<Proposal>* out) override;
  void OnWakeUp(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override;
  void OnJobEnded(const ClusterView& v, JobId job, tailcut::JobState state, std::vector<Proposal>* out) override;
  bool AvoidExecutor(const ClusterView& v, ExecutorId e) const override;

 private:
  // One candidate the controller decided on (a task for copies and
  // restarts, a job for clones), until its outcome.
  struct Subject {
    std::string arm;
    bool treated = false;
    bool applied = false;  // the core carried the action out (its cost counts)
    Time decided = 0;
    double cost = 0;          // slot seconds taken while work waited
    Time copy_launched = -1;  // task subjects: when the copy it bought started racing
    double predicted = -1;    // task subjects: the original's expected time left at the decision; < 0 unknown
    uint32_t copies = 0;      // clones per task (job subjects)
    uint32_t committed = 0, needed = 0;  // job subjects
  };
  // Calls `hook` on each inner policy, filtering what it proposes.
  void Each(const ClusterView& v, std::vector<Proposal>* out,
            const std::function<void(MitigationPolicy&, std::vector<Proposal>*)>& hook);
  void Filter(const ClusterView& v, uint32_t source, std::vector<Proposal>& in, std::vector<Proposal>* out);
  // Whether to pass an action on `key`'s subject (deciding it the first time).
  bool Admit(std::map<std::pair<JobId, TaskIndex>, Subject>& subjects, std::pair<JobId, TaskIndex> key,
             const std::string& arm, Time now, uint32_t copies, double predicted);
  // Whether the free slots cover every other job's unlaunched tasks and
  // `job`'s tasks with `copies` clones each.
  static bool IdleFor(const ClusterView& v, JobId job, uint32_t copies);
  // The expected time left of attempt `a` (PredictorSuite::Assess); < 0 unknown.
  static double TimeLeft(const ClusterView& v, const AttemptView& a);
  std::string Arm(const ClusterView& v, JobId job, TaskIndex task, const char* kind, uint32_t source) const;

  PayoffOptions o_;
  PolicyChain inner_;
  PayoffLedger ledger_;
  // Copies and restarts by (job, task); clones by (job, 0). Bounded.
  std::map<std::pair<JobId, TaskIndex>, Subject> tasks_, jobs_;
  InnerWakeUps wakeups_;
  // The live first attempt of each task (what a copy races).
  std::map<std::pair<JobId, TaskIndex>, AttemptView> originals_;
};

// [policies.payoff] around `inner`.
StatusOr<std::unique_ptr<MitigationPolicy>> MakePayoffPolicy(const Config& cfg, const std::string& prefix,
                                                             PolicyChain inner);

}  // namespace tailcut
