#include "tailcut/policies/payoff.h"

#include <algorithm>
#include <cmath>

#include "policy_util.h"
#include "tailcut/common/random.h"
#include "tailcut/predictors/predictor.h"

namespace tailcut {

using namespace policy_util;

Status LoadPayoffOptions(const Config& cfg, const std::string& prefix, PayoffOptions* o) {
  TableReader p(cfg, prefix);
  int64_t seed = static_cast<int64_t>(o->seed);
  p.Get("enabled", &o->enabled)
      .Get("warmup", &o->warmup)
      .Get("control", &o->control)
      .Get("explore", &o->explore)
      .Get("z", &o->z)
      .Get("memory", &o->memory)
      .Get("seed", &seed)
      .Check(o->warmup >= 1, "warmup must be >= 1")
      .Check(o->control > 0 && o->control < 0.5, "control must be in (0, 0.5)")
      .Check(o->explore > 0 && o->explore < 0.5, "explore must be in (0, 0.5)")
      .Check(o->z >= 0, "z must be >= 0")
      .Check(o->memory >= 2, "memory must be >= 2");
  o->seed = static_cast<uint64_t>(seed);
  return p.status();
}

// ------------------------------------------------------------ ledger --

bool PayoffLedger::Decide(const std::string& arm, bool relative) {
  arms_[arm].relative = relative;
  const Verdict v = Judge(arm);
  const double gain = Gain(arm);
  // Warming up, a relative arm trusts its proposer's rule (the prediction
  // is the control); an absolute one needs both groups: a fair coin.
  double act = relative ? 1 - o_.control : 0.5;
  if (v == Verdict::kPays) act = 1 - o_.control;
  if (v == Verdict::kCosts) act = o_.explore;
  // Unsure: lean on the evidence so far (a relative arm that gains goes on
  // acting: its treated samples are the evidence).
  if (v == Verdict::kUnsure) act = gain > 0 ? (relative ? 1 - o_.control : 0.75) : 0.25;
  Arm& a = arms_[arm];
  // Not judged yet: at most `warmup` actions in flight, so that an arm that
  // costs is not acted on many times before its first outcomes come in.
  if ((v == Verdict::kWarmup || v == Verdict::kUnsure) && a.pending >= o_.warmup) act = 0;
  a.decisions++;
  const bool yes = uniform_() < act;
  a.acted += yes;
  a.pending += yes;
  return yes;
}

void PayoffLedger::Outcome(const std::string& arm, bool treated, double seconds) {
  Arm& a = arms_[arm];
  if (treated && a.pending > 0) a.pending--;
  Group& g = treated ? a.treated : a.control;
  // Exponential forgetting: the last `memory` samples of the group count,
  // so a shape that changes is noticed.
  const double keep = g.n + 1 > o_.memory ? 1 - 1 / o_.memory : 1;
  g.n = g.n * keep + 1;
  g.sum = g.sum * keep + seconds;
  g.sq = g.sq * keep + seconds * seconds;
}

PayoffLedger::Verdict PayoffLedger::Judge(const std::string& arm) const {
  auto it = arms_.find(arm);
  if (it == arms_.end()) return Verdict::kWarmup;
  const Arm& a = it->second;
  const bool control_known = a.control.n >= o_.warmup;
  if (a.treated.n < o_.warmup || (!a.relative && !control_known)) return Verdict::kWarmup;
  const double gain = (control_known ? a.control.Mean() : 0) - a.treated.Mean();
  const double se = std::sqrt(a.treated.Var() / a.treated.n + (control_known ? a.control.Var() / a.control.n : 0));
  if (gain > o_.z * se) return Verdict::kPays;
  if (gain < -o_.z * se) return Verdict::kCosts;
  return Verdict::kUnsure;
}

double PayoffLedger::Gain(const std::string& arm) const {
  auto it = arms_.find(arm);
  if (it == arms_.end() || it->second.treated.n == 0) return 0;
  const Arm& a = it->second;
  if (a.control.n < o_.warmup) return a.relative ? -a.treated.Mean() : 0;
  return a.control.Mean() - a.treated.Mean();
}

// ------------------------------------------------------------ policy --

namespace {
// Subjects kept at most (each map); past it the oldest job's go first.
constexpr size_t kMaxSubjects = 1 << 16;
}  // namespace

PayoffPolicy::PayoffPolicy(PayoffOptions o, PolicyChain inner, std::function<double()> uniform)
    : o_(o),
      inner_(std::move(inner)),
      ledger_(
          o, uniform ? std::move(uniform) : [rng = std::make_shared<Rng>(Mix(o.seed))] { return rng->Uniform(); }) {}

bool PayoffPolicy::IdleFor(const ClusterView& v, JobId job, uint32_t copies) {
  // Bounded: past this many jobs, assume the fleet is busy.
  constexpr size_t kScan = 256;
  uint64_t waiting = 0, jobs = 0, mine = 0;
  v.ForEachJob([&](const JobView& j) {
    ++jobs;
    if (j.id == job)
      mine = j.tasks;
    else
      waiting += j.unlaunched;
  });
  return jobs <= kScan && waiting + mine * (1ULL + copies) <= v.FreeSlots();
}

std::string PayoffPolicy::Arm(const ClusterView& v, JobId job, TaskIndex task, const char* kind,
                              uint32_t source) const {
  JobView j;
  std::string cls = v.FindJob(job, &j) && j.def && task < j.def->TaskCount() ? j.def->Task(task).ClassName() : "?";
  return cls + "/" + kind + "/" + std::string(inner_[source]->name());
}

double PayoffPolicy::TimeLeft(const ClusterView& v, const AttemptView& a) {
  const PredictorSuite* pred = v.Predictors();
  JobView j;
  if (!pred || !v.FindJob(a.job, &j) || !j.def || a.task >= j.def->TaskCount()) return -1;
  const StragglerEstimate est = pred->Assess(ToRunning(a, j.def->Task(a.task), v.RunTime(a)));
  return est.expected_total > 0 ? est.time_left : -1;
}

bool PayoffPolicy::Admit(std::map<std::pair<JobId, TaskIndex>, Subject>& subjects, std::pair<JobId, TaskIndex> key,
                         const std::string& arm, Time now, uint32_t copies, double predicted) {
  if (!o_.enabled) return true;
  // Once decided, a subject stays in its group: a held-back task gets no
  // action from any policy (it is `none`'s), a treated one every action.
  if (auto it = subjects.find(key); it != subjects.end()) return it->second.treated;
  if (subjects.size() >= kMaxSubjects) subjects.erase(subjects.begin());
  Subject s;
  s.arm = arm;
  s.treated = ledger_.Decide(arm, &subjects == &tasks_);
  s.decided = now;
  s.copies = copies;
  s.predicted = predicted;
  return subjects.emplace(key, std::move(s)).first->second.treated;
}

void PayoffPolicy::Filter(const ClusterView& v, uint32_t source, std::vector<Proposal>& in,
                          std::vector<Proposal>* out) {
  for (Proposal& p : in) {
    bool pass = true;
    switch (p.kind) {
      case Proposal::Kind::kWakeUp: wakeups_.Add(p.attempt, p.at, source); break;
      case Proposal::Kind::kLaunchCopy: {
        AttemptView a;
        auto o = originals_.find({p.job, p.task});
        const double left = o != originals_.end() && v.FindAttempt(o->second.attempt, &a) ? TimeLeft(v, a) : -1;
        pass = Admit(tasks_, {p.job, p.task}, Arm(v, p.job, p.task, "copy", source), v.Now(), 0, left);
        break;
      }
      case Proposal::Kind::kCancelAttempt: {
        AttemptView a;  // a task's only attempt: a restart; else it only ends a race
        if (v.FindAttempt(p.attempt, &a) && a.task_live == 1)
          pass = Admit(tasks_, {a.job, a.task}, Arm(v, a.job, a.task, "restart", source), v.Now(), 0, TimeLeft(v, a));
        break;
      }
      case Proposal::Kind::kCloneAtLaunch: {
        // A clone's cost is known up front: on a fleet whose free slots do
        // not cover the waiting work and the clones, it takes a slot a first
        // attempt needs. Then there is nothing to learn: no clone.
        if (!o_.enabled || !IdleFor(v, p.job, p.copies)) {
          pass = o_.enabled ? false : true;
          break;
        }
        pass = Admit(jobs_, {p.job, 0}, Arm(v, p.job, 0, "clone", source), v.Now(), p.copies, -1);
        JobView j;
        if (auto it = jobs_.find({p.job, 0}); it != jobs_.end() && v.FindJob(p.job, &j)) it->second.needed = j.needed;
        break;
      }
      default: break;
    }
    if (pass) out->push_back(std::move(p));
  }
}

void PayoffPolicy::Each(const ClusterView& v, std::vector<Proposal>* out,
                        const std::function<void(MitigationPolicy&, std::vector<Proposal>*)>& hook) {
  std::vector<Proposal> mine;
  for (uint32_t i = 0; i < inner_.size(); ++i) {
    mine.clear();
    hook(*inner_[i], &mine);
    Filter(v, i, mine, out);
  }
}

void PayoffPolicy::OnJobSubmitted(const ClusterView& v, JobId job, std::vector<Proposal>* out) {
  Each(v, out, [&](MitigationPolicy& p, std::vector<Proposal>* o) { p.OnJobSubmitted(v, job, o); });
}

void PayoffPolicy::OnTick(const ClusterView& v, std::vector<Proposal>* out) {
  Each(v, out, [&](MitigationPolicy& p, std::vector<Proposal>* o) { p.OnTick(v, o); });
}

void PayoffPolicy::OnAttemptLaunched(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) {
  if (!a.copy && a.task_live == 1) originals_[{a.job, a.task}] = a;
  if (a.copy) {  // an action the core carried out
    if (auto it = tasks_.find({a.job, a.task}); it != tasks_.end() && it->second.copy_launched < 0) {
      it->second.applied = true;
      it->second.copy_launched = v.Now();
    }
    if (auto it = jobs_.find({a.job, 0}); it != jobs_.end()) it->second.applied = true;
  }
  Each(v, out, [&](MitigationPolicy& p, std::vector<Proposal>* o) { p.OnAttemptLaunched(v, a, o); });
}

void PayoffPolicy::OnAttemptStarted(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) {
  Each(v, out, [&](MitigationPolicy& p, std::vector<Proposal>* o) { p.OnAttemptStarted(v, a, o); });
}

void PayoffPolicy::OnAttemptProgress(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) {
  Each(v, out, [&](MitigationPolicy& p, std::vector<Proposal>* o) { p.OnAttemptProgress(v, a, o); });
}

void PayoffPolicy::OnAttemptEnded(const ClusterView& v, const AttemptView& a, const AttemptEnd& e,
                                  std::vector<Proposal>* out) {
  wakeups_.Forget(a.attempt);
  if (auto o = originals_.find({a.job, a.task}); o != originals_.end() && o->second.attempt == a.attempt)
    originals_.erase(o);
  Each(v, out, [&](MitigationPolicy& p, std::vector<Proposal>* o) { p.OnAttemptEnded(v, a, e, o); });
  // Slot time an action took costs only while other work waited for a slot.
  const bool contended = v.FreeSlots() == 0;
  if (e.outcome == AttemptOutcome::kCancelled && a.task_live == 1) {  // a restart went through
    if (auto it = tasks_.find({a.job, a.task}); it != tasks_.end()) it->second.applied = true;
  }
  if (e.outcome != AttemptOutcome::kCommitted) return;
  if (auto it = tasks_.find({a.job, a.task}); it != tasks_.end()) {
    Subject& s = it->second;
    const double race = s.copy_launched >= 0 && contended ? e.ended - s.copy_launched : 0;
    // Against the prediction: a candidate without one gives no sample.
    // By assignment (treated whether or not the core could carry it out),
    // so that the groups stay alike.
    if (s.predicted >= 0) ledger_.Outcome(s.arm, s.treated, e.ended - s.decided + (s.treated ? race : 0) - s.predicted);
    tasks_.erase(it);
  }
  if (auto it = jobs_.find({a.job, 0}); it != jobs_.end()) {
    Subject& s = it->second;
    if (s.treated && s.applied && contended) s.cost += e.run_s * s.copies;
    if (++s.committed >= s.needed) {
      ledger_.Outcome(s.arm, s.treated, e.ended - s.decided + s.cost);
      jobs_.erase(it);
    }
  }
}

void PayoffPolicy::OnExecutorChanged(const ClusterView& v, ExecutorId e, ExecutorChange c, std::vector<Proposal>* out) {
  Each(v, out, [&](MitigationPolicy& p, std::vector<Proposal>* o) { p.OnExecutorChanged(v, e, c, o); });
}

void PayoffPolicy::OnJobEnded(const ClusterView& v, JobId job, tailcut::JobState state, std::vector<Proposal>* out) {
  Each(v, out, [&](MitigationPolicy& p, std::vector<Proposal>* o) { p.OnJobEnded(v, job, state, o); });
}

void PayoffPolicy::OnWakeUp(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) {
  std::vector<uint32_t> due = wakeups_.TakeDue(a.attempt, v.Now());
  std::vector<Proposal> mine;
  for (uint32_t i : due) {
    mine.clear();
    inner_[i]->OnWakeUp(v, a, &mine);
    Filter(v, i, mine, out);
  }
}

bool PayoffPolicy::AvoidExecutor(const ClusterView& v, ExecutorId e) const {
  return std::any_of(inner_.begin(), inner_.end(), [&](const auto& p) { return p->AvoidExecutor(v, e); });
}

StatusOr<std::unique_ptr<MitigationPolicy>> MakePayoffPolicy(const Config& cfg, const std::string& prefix,
                                                             PolicyChain inner) {
  PayoffOptions o;
  if (Status s = LoadPayoffOptions(cfg, prefix, &o); !s.ok()) return s;
  return std::unique_ptr<MitigationPolicy>(std::make_unique<PayoffPolicy>(o, std::move(inner)));
}

}  // namespace tailcut
