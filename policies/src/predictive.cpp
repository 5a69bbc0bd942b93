#include "tailcut/policies/predictive.h"

#include <cmath>
#include <limits>
#include <map>

#include "mitigation_cost.h"
#include "policy_util.h"
#include "tailcut/common/id_map.h"
#include "tailcut/predictors/predictor.h"

namespace tailcut {

using namespace policy_util;

Status LoadPredictiveOptions(const Config& cfg, const std::string& prefix, PredictiveOptions* o) {
  TableReader p(cfg, prefix);
  p.Get("speed_threshold", &o->speed_threshold)
      .Get("p_straggler", &o->p_straggler)
      .Get("restart", &o->restart)
      .Get("restart_p", &o->restart_p)
      .Get("restart_ratio", &o->restart_ratio)
      .Get("copy_ratio", &o->copy_ratio)
      .Get("min_runtime_ratio", &o->min_runtime_ratio)
      .Get("min_runtime_s", &o->min_runtime_s)
      .Get("min_samples", &o->min_samples)
      .Get("fallback_quantile", &o->fallback_quantile)
      .Get("fallback_multiplier", &o->fallback_multiplier)
      .Get("speculate_coded", &o->speculate_coded)
      .Check(o->speed_threshold > 1, "speed_threshold must be > 1")
      .Check(o->p_straggler > 0 && o->p_straggler <= 1, "p_straggler must be in (0, 1]")
      .Check(o->restart_p > 0 && o->restart_p <= 1, "restart_p must be in (0, 1]")
      .Check(o->restart_ratio >= 1, "restart_ratio must be >= 1")
      .Check(o->copy_ratio >= 0, "copy_ratio must be >= 0")
      .Check(o->min_runtime_ratio >= 0, "min_runtime_ratio must be >= 0")
      .Check(o->min_runtime_s >= 0, "min_runtime_s must be >= 0")
      .Check(o->fallback_quantile > 0 && o->fallback_quantile <= 1, "fallback_quantile must be in (0, 1]")
      .Check(o->fallback_multiplier >= 1, "fallback_multiplier must be >= 1");
  return p.status();
}

struct PredictivePolicy::State {
  State(SlowdownTracker::Options t, SparkOptions s) : tracker(t), fallback(s, "predictive") {}
  SlowdownTracker tracker;
  SparkPolicy fallback;
  CopiedTasks copied;
  std::unordered_set<ExecutorId> slow;  // own estimate (without predictors)
  // Judged stragglers that found no room for a copy; retried each tick while
  // there is room (O(1) when there is none).
  std::vector<AttemptId> waiting;
  std::unordered_set<AttemptId> waiting_set;
  // Restarts per task, at most kMaxRestarts: a task whose every run is long
  // (mispredicted, not straggling) must not be restarted forever. Entries go
  // when the task commits or its job is gone (OnTick).
  static constexpr uint8_t kMaxRestarts = 3;
  std::map<std::pair<JobId, TaskIndex>, uint8_t> restarts;
  uint8_t Restarts(JobId j, TaskIndex t) const {
    auto it = restarts.find({j, t});
    return it == restarts.end() ? 0 : it->second;
  }
  // Tasks racing copies, with their live attempts: what DropHopelessCopies
  // looks at (O(copies), not O(running attempts)).
  std::map<std::pair<JobId, TaskIndex>, std::vector<AttemptId>> racing;
  // Attempts found waiting in their executor's queue, judged once started:
  // an entry per pipelined no-op, so a flat set (no node per entry, issue 41).
  IdSet waiting_start;
};

namespace {
SparkOptions FallbackOptions(const PredictiveOptions& o) {
  SparkOptions s;
  s.quantile = o.fallback_quantile;
  s.multiplier = o.fallback_multiplier;
  s.min_runtime_s = o.min_runtime_s;
  s.speculate_coded = o.speculate_coded;
  return s;
}

// The elapsed time at which P(straggler) of `ra` (progress as reported so
// far) first reaches `p`, to within ~2%: it grows with elapsed time, so a
// doubling search and a few bisection steps find it. Infinity when it does
// not within 2^12 x the current elapsed time.
double CrossingElapsed(const PredictorSuite& pred, RunningAttempt ra, double p) {
  double lo = std::max(ra.elapsed, 1e-6), hi = lo;
  for (int i = 0;; ++i) {
    if (i == 12) return std::numeric_limits<double>::infinity();
    hi = 2 * lo;
    ra.elapsed = hi;
    if (pred.Assess(ra).p_straggler >= p) break;
    lo = hi;
  }
  for (int i = 0; i < 6; ++i) {
    double mid = 0.5 * (lo + hi);
    ra.elapsed = mid;
    (pred.Assess(ra).p_straggler >= p ? hi : lo) = mid;
  }
  return hi;
}
}  // namespace

// The age at which an attempt of `d` may first be judged (PredictiveOptions).
double PredictivePolicy::JudgeAge(const PredictorSuite& pred, const TaskDef& d) const {
  LatencyEstimate e = pred.Predict(d.ClassName(), d.input_size, 0);
  double rel = e.known() && e.median > 0 ? o_.min_runtime_ratio * e.median : 0;
  return std::max(rel, o_.min_runtime_s);
}

PredictivePolicy::PredictivePolicy(PredictiveOptions o)
    : o_(o), st_(std::make_shared<State>(SlowdownTracker::Options{0.3, o.min_samples}, FallbackOptions(o))) {}

void PredictivePolicy::OnAttemptLaunched(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) {
  if (a.task_live > 1) {  // racing copies already
    st_->copied.Add(a.job, a.task);
    st_->racing[{a.job, a.task}].push_back(a.attempt);
  }
  // First look when it may be judged; OnWakeUp then arms the next one at
  // the predicted threshold crossing.
  const PredictorSuite* pred = v.Predictors();
  if (!pred) return;
  // Queued behind others on its executor (tiny tasks pipelined): it is
  // judged on the time it has run (Judge), so its first look is armed at
  // its start. A look at its launch age would only find it waiting and
  // arm this same one (issue 41: one proposal, two wake-ups and a hash
  // entry less per pipelined no-op, which usually ends with its start).
  if (v.WaitingOnExecutor(a)) {
    st_->waiting_start.Insert(a.attempt);
    return;
  }
  JobView j;
  if (v.FindJob(a.job, &j) && j.def && a.task < j.def->TaskCount())
    out->push_back(Proposal::WakeUp(a.attempt, a.queued + JudgeAge(*pred, j.def->Task(a.task))));
}

// One waiting in its executor's queue at its launch, or when judged
// (Judge), was not judged: its clock starts now. One that ended already
// (its start and its result came in one report) needs no wake-up.
void PredictivePolicy::OnAttemptStarted(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) {
  const PredictorSuite* pred = v.Predictors();
  if (!pred || !st_->waiting_start.Erase(a.attempt)) return;
  AttemptView live;
  JobView j;
  if (v.FindAttempt(a.attempt, &live) && v.FindJob(a.job, &j) && j.def && a.task < j.def->TaskCount())
    out->push_back(Proposal::WakeUp(a.attempt, a.started + JudgeAge(*pred, j.def->Task(a.task))));
}

void PredictivePolicy::OnAttemptProgress(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) {
  // A report may move the estimate (LATE): judge now (Judge checks the
  // age); the armed wake-up stays.
  if (a.task_live == 1) Judge(v, a, /*rearm=*/false, out);
}

void PredictivePolicy::OnWakeUp(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) {
  Judge(v, a, /*rearm=*/true, out);
}

void PredictivePolicy::Judge(const ClusterView& v, const AttemptView& a, bool rearm, std::vector<Proposal>* out) {
  State& s = *st_;
  const PredictorSuite* pred = v.Predictors();
  if (!pred || a.task_live != 1 || s.copied.Has(a.job, a.task)) return;
  JobView j;
  if (!v.FindJob(a.job, &j) || !j.def || a.task >= j.def->TaskCount()) return;
  if (!o_.speculate_coded && !PlainJob(j)) return;
  const TaskDef& d = j.def->Task(a.task);
  // Judged on the time it has run (ClusterView::RunTime): not while it
  // waits in its executor's queue (OnAttemptStarted arms it then), and less
  // the scheduler's own report lag.
  if (v.WaitingOnExecutor(a)) {
    st_->waiting_start.Insert(a.attempt);
    return;
  }
  const Time since = (a.started >= 0 ? a.started : a.queued) + v.ReportLag();
  // Compared as the wake-up time was computed: now - since may round below
  // the age at exactly since + age.
  const double age = JudgeAge(*pred, d);
  if (v.Now() < since + age) {
    if (rearm) out->push_back(Proposal::WakeUp(a.attempt, since + age));
    return;
  }
  double el = std::max(Elapsed(v, a), age);
  RunningAttempt ra = ToRunning(a, d, el);
  StragglerEstimate est = pred->Assess(ra);
  if (est.p_straggler < o_.p_straggler) {
    if (!rearm) return;
    double at = CrossingElapsed(*pred, ra, o_.p_straggler);
    // A hair late, so that rounding cannot leave it just short of the
    // crossing. No crossing (the suite knows too little yet): look again at
    // twice the age, so what it learns meanwhile is used.
    at = std::isfinite(at) ? at * (1 + 1e-9) + 1e-9 : 2 * el;
    out->push_back(Proposal::WakeUp(a.attempt, since + at));
    return;
  }
  if (Act(v, a, d, est, v.CopiesAllowed() > 0 && v.FreeSlots() > 0, out)) {
    s.waiting_set.erase(a.attempt);  // its `waiting` entry goes stale
    return;
  }
  // No room for a copy and not hopeless yet: OnTick copies it when a slot
  // frees; a wake-up looks again for when it may have become hopeless.
  if (s.waiting_set.insert(a.attempt).second) s.waiting.push_back(a.attempt);
  if (rearm && o_.restart && s.Restarts(a.job, a.task) < State::kMaxRestarts) {
    double at = est.p_straggler < o_.restart_p ? CrossingElapsed(*pred, ra, o_.restart_p) : 2 * el;
    at = std::isfinite(at) ? at * (1 + 1e-9) + 1e-9 : 2 * el;
    out->push_back(Proposal::WakeUp(a.attempt, since + at));
  }
}

// Wait, copy or restart by expected cost (mitigation_cost.h). True when it
// acted.
bool PredictivePolicy::Act(const ClusterView& v, const AttemptView& a, const TaskDef& d, const StragglerEstimate& est,
                           bool slot_free, std::vector<Proposal>* out) {
  State& s = *st_;
  const double fresh = v.Predictors()->Predict(d.ClassName(), d.input_size, 0).median;
  const policy_util::LagFacts f{est.p_straggler, est.time_left, fresh, slot_free};
  policy_util::MitigationCostOptions c;
  c.act_p = o_.p_straggler;
  c.restart_p = o_.restart_p;
  c.restart_ratio = o_.restart_ratio;
  c.copy_ratio = o_.copy_ratio;
  // Without a free slot the relaunch runs where this attempt runs now: once
  // per task (if its executor is the cause, not yet known, restarting there
  // again gains nothing; a later restart waits for a slot elsewhere).
  const uint8_t done = s.Restarts(a.job, a.task);
  c.restart = o_.restart && done < State::kMaxRestarts && (f.slot_free || done == 0);
  switch (policy_util::ChooseMitigation(f, c)) {
    case policy_util::Mitigation::kWait: return false;
    case policy_util::Mitigation::kCopy:
      s.copied.Add(a.job, a.task);
      s.racing[{a.job, a.task}].push_back(a.attempt);  // the copy joins at its launch
      out->push_back(Proposal::LaunchCopy(a.job, a.task, "predictive: p_straggler " + std::to_string(est.p_straggler)));
      return true;
    case policy_util::Mitigation::kRestart:  // the core relaunches it at once, on this slot if none is better
      s.restarts[{a.job, a.task}]++;
      out->push_back(Proposal::CancelAttempt(
          a.attempt, "predictive: restart, p_straggler " + std::to_string(est.p_straggler) + ", time left " +
                         std::to_string(est.time_left) + " s vs fresh " + std::to_string(fresh) + " s" +
                         (f.slot_free ? "" : ", no free slot for a copy")));
      return true;
  }
  return false;
}

void PredictivePolicy::OnAttemptEnded(const ClusterView& v, const AttemptView& a, const AttemptEnd& end,
                                      std::vector<Proposal>*) {
  State& s = *st_;
  // The own slowdown estimate stands in for the predictors' speed factor
  // (AvoidExecutor): with a suite it is never read, so it is not kept
  // (one lookup of the job, the executor and the prediction less per ended
  // attempt, issue 41).
  if (!v.Predictors() && s.tracker.OnEnded(v, a, end)) {
    if (s.tracker.Slowdown(a.executor) >= o_.speed_threshold)
      s.slow.insert(a.executor);
    else
      s.slow.erase(a.executor);
  }
  // Racing and restarted tasks are rare: their maps are usually empty, and
  // asked so first (issue 41).
  const std::pair<JobId, TaskIndex> key{a.job, a.task};
  if (auto it = s.racing.empty() ? s.racing.end() : s.racing.find(key); it != s.racing.end()) {
    std::erase(it->second, a.attempt);
    if (a.task_live <= 1) s.racing.erase(it);
  }
  if (end.outcome == AttemptOutcome::kCommitted && !s.restarts.empty()) s.restarts.erase(key);
  s.waiting_start.Erase(a.attempt);
  if (a.task_live <= 1) s.copied.Forget(a.job, a.task);  // its last attempt: bounded memory
}

void PredictivePolicy::OnExecutorChanged(const ClusterView& v, ExecutorId e, ExecutorChange c,
                                         std::vector<Proposal>* out) {
  if (c == ExecutorChange::kLost || c == ExecutorChange::kLeft) st_->slow.erase(e);
  // Its speed estimate moved (e.g. it turned fail-slow): the crossing times
  // armed for its attempts are stale, judge them again now. Only when it
  // got worse (suspect or fail-slow): back to healthy or recovered, the
  // crossings armed with the worse estimate come early, and each re-arms
  // itself when it finds its attempt below the threshold. On a loaded
  // healthy fleet the health of many executors flaps between healthy and
  // suspect, and each change walked all their attempts (3% of a default
  // no-op's scheduler samples at 1,000 hollow executors, issue 41).
  const PredictorSuite* pred = v.Predictors();
  if (c != ExecutorChange::kHealthChanged || !pred) return;
  const NodeHealth h = pred->Health(e).state;
  if (h == NodeHealth::kSuspect || h == NodeHealth::kFailSlow)
    v.ForEachAttemptOn(e, [&](const AttemptView& a) { Judge(v, a, /*rearm=*/true, out); });
}

void PredictivePolicy::OnTick(const ClusterView& v, std::vector<Proposal>* out) {
  State& s = *st_;
  const PredictorSuite* pred = v.Predictors();
  if (!pred) {  // the fallback scans (O(running attempts) per tick); only without predictors
    s.fallback.OnTick(v, out);
    return;
  }
  JobView gone;
  for (auto it = s.restarts.begin(); it != s.restarts.end();)  // O(restarted tasks)
    it = v.FindJob(it->first.first, &gone) ? std::next(it) : s.restarts.erase(it);
  if (o_.restart) DropHopelessCopies(v, out);
  uint32_t allowed = v.CopiesAllowed();
  uint64_t free = v.FreeSlots();  // the view does not count what is proposed here: count down
  if (s.waiting.empty() || allowed == 0 || free == 0) return;
  size_t keep = 0;
  for (size_t i = 0; i < s.waiting.size(); ++i) {
    AttemptId id = s.waiting[i];
    AttemptView a;
    JobView j;
    bool live = s.waiting_set.count(id) && v.FindAttempt(id, &a) && a.task_live == 1 && !s.copied.Has(a.job, a.task) &&
                v.FindJob(a.job, &j) && j.def && a.task < j.def->TaskCount();
    if (!live) {
      s.waiting_set.erase(id);
      continue;
    }
    const TaskDef& d = j.def->Task(a.task);
    if (allowed == 0 || free == 0 || !Act(v, a, d, pred->Assess(ToRunning(a, d, Elapsed(v, a))), true, out)) {
      s.waiting[keep++] = id;
      continue;
    }
    --allowed;
    --free;
    s.waiting_set.erase(id);
  }
  s.waiting.resize(keep);
}

// A task already racing copies: cancel the attempts that are hopeless while
// another one is not (its slot is better used elsewhere). O(racing attempts).
void PredictivePolicy::DropHopelessCopies(const ClusterView& v, std::vector<Proposal>* out) {
  const PredictorSuite* pred = v.Predictors();
  for (auto& [key, ids] : st_->racing) {
    JobView j;
    if (ids.size() < 2 || !v.FindJob(key.first, &j) || !j.def || key.second >= j.def->TaskCount() ||
        (!o_.speculate_coded && !PlainJob(j)))
      continue;
    const TaskDef& d = j.def->Task(key.second);
    double fresh = pred->Predict(d.ClassName(), d.input_size, 0).median;
    const double age = JudgeAge(*pred, d);
    std::vector<std::pair<AttemptId, double>> hopeless;
    bool any_fine = false;
    for (AttemptId id : ids) {
      AttemptView a;
      if (!v.FindAttempt(id, &a)) continue;
      double el = Elapsed(v, a);
      if (el < age) {  // too young to judge: counts as fine
        any_fine = true;
        continue;
      }
      StragglerEstimate est = pred->Assess(ToRunning(a, d, el));
      if (est.p_straggler >= o_.restart_p && fresh > 0 && est.time_left >= o_.restart_ratio * fresh)
        hopeless.emplace_back(a.attempt, est.p_straggler);
      else
        any_fine = true;
    }
    if (!any_fine) continue;
    for (auto& [id, p] : hopeless)
      out->push_back(
          Proposal::CancelAttempt(id, "predictive: drop hopeless attempt, p_straggler " + std::to_string(p)));
  }
}

bool PredictivePolicy::AvoidExecutor(const ClusterView& v, ExecutorId e) const {
  if (const PredictorSuite* pred = v.Predictors()) return pred->SpeedFactor(e) >= o_.speed_threshold;
  return st_->slow.count(e) > 0;
}

StatusOr<std::unique_ptr<MitigationPolicy>> MakePredictivePolicy(const Config& cfg, const std::string& prefix) {
  PredictiveOptions o;
  if (Status s = LoadPredictiveOptions(cfg, prefix, &o); !s.ok()) return s;
  return std::unique_ptr<MitigationPolicy>(std::make_unique<PredictivePolicy>(o));
}

}  // namespace tailcut
