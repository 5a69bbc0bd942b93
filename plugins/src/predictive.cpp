#include "tailcut/plugins/predictive.h"

#include <map>

#include "mitigation_cost.h"
#include "policy_util.h"
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
      .Get("min_runtime_s", &o->min_runtime_s)
      .Get("min_samples", &o->min_samples)
      .Get("fallback_quantile", &o->fallback_quantile)
      .Get("fallback_multiplier", &o->fallback_multiplier)
      .Get("speculate_coded", &o->speculate_coded)
      .Check(o->speed_threshold > 1, "speed_threshold must be > 1")
      .Check(o->p_straggler > 0 && o->p_straggler <= 1, "p_straggler must be in (0, 1]")
      .Check(o->restart_p > 0 && o->restart_p <= 1, "restart_p must be in (0, 1]")
      .Check(o->restart_ratio >= 1, "restart_ratio must be >= 1")
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
  // Restarts per task, at most kMaxRestarts: a task whose every run is long
  // (mispredicted, not straggling) must not be restarted forever.
  static constexpr uint8_t kMaxRestarts = 3;
  std::unordered_map<JobId, std::unordered_map<TaskIndex, uint8_t>> restarts;
  bool MayRestart(JobId j, TaskIndex t) const {
    auto it = restarts.find(j);
    if (it == restarts.end()) return true;
    auto t_it = it->second.find(t);
    return t_it == it->second.end() || t_it->second < kMaxRestarts;
  }
  bool Restarted(JobId j, TaskIndex t) const {
    auto it = restarts.find(j);
    return it != restarts.end() && it->second.count(t);
  }
  std::unordered_set<ExecutorId> slow;  // own estimate, refreshed each tick
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
}  // namespace

PredictivePolicy::PredictivePolicy(PredictiveOptions o)
    : o_(o), st_(std::make_shared<State>(SlowdownTracker::Options{0.3, o.min_samples}, FallbackOptions(o))) {}

void PredictivePolicy::OnTick(const ClusterView& v, std::vector<Proposal>* out) {
  State& s = *st_;
  s.tracker.Update(v);
  s.slow.clear();
  v.ForEachExecutor([&](const ExecutorView& e) {
    if (s.tracker.Slowdown(e.id) >= o_.speed_threshold) s.slow.insert(e.id);
  });
  const PredictorSuite* pred = v.Predictors();
  if (!pred) {
    s.fallback.OnTick(v, out);
    return;
  }
  auto jobs = JobsById(v);
  s.copied.Prune(jobs);
  for (auto it = s.restarts.begin(); it != s.restarts.end();)
    it = jobs.count(it->first) ? std::next(it) : s.restarts.erase(it);
  uint32_t allowed = v.CopiesAllowed();
  uint64_t free = 0;  // slots a copy could take right now
  v.ForEachExecutor([&](const ExecutorView& e) {
    if (!e.quarantined && e.slots > e.used_slots) free += e.slots - e.used_slots;
  });
  struct Judged {
    AttemptView a;
    StragglerEstimate est;
    double fresh = 0;  // typical run time of a fresh attempt
  };
  auto judge = [&](const AttemptView& a, const JobView& j, Judged* out) {
    double el = Elapsed(v, a);
    if (el < o_.min_runtime_s) return false;
    const TaskDef& d = j.def->Task(a.task);
    RunningAttempt ra;
    ra.attempt = a.attempt;
    ra.executor = a.executor;
    ra.task_class = d.ClassName();
    ra.input_size = d.input_size;
    ra.elapsed = el;
    ra.progress = a.progress;
    out->a = a;
    out->est = pred->Assess(ra);
    out->fresh = pred->Predict(d.ClassName(), d.input_size, 0).median;
    return true;
  };
  MitigationCostOptions cost;
  cost.act_p = o_.p_straggler;
  cost.restart_p = o_.restart_p;
  cost.restart_ratio = o_.restart_ratio;
  cost.restart = o_.restart;
  auto hopeless = [&](const Judged& x) {
    return o_.restart && x.est.p_straggler >= o_.restart_p && x.fresh > 0 && x.est.time_left >= o_.restart_ratio * x.fresh;
  };
  std::map<std::pair<JobId, TaskIndex>, std::vector<AttemptView>> multi;  // tasks with copies
  v.ForEachRunningAttempt([&](const AttemptView& a) {
    auto jt = jobs.find(a.job);
    if (jt == jobs.end()) return;
    if (!o_.speculate_coded && !PlainJob(jt->second)) return;
    if (a.task_live != 1) {
      s.copied.Add(a.job, a.task);
      if (o_.restart) multi[{a.job, a.task}].push_back(a);
      return;
    }
    if (s.copied.Has(a.job, a.task)) return;
    Judged x;
    if (!judge(a, jt->second, &x)) return;
    LagFacts f{x.est.p_straggler, x.est.time_left, x.fresh, allowed > 0 && free > 0};
    MitigationCostOptions c = cost;
    // Without a free slot the relaunch runs where this attempt runs now: once
    // per task (if its executor is the cause, not yet known, restarting there
    // again gains nothing; a later restart waits for a slot elsewhere).
    c.restart = cost.restart && s.MayRestart(a.job, a.task) && (f.slot_free || !s.Restarted(a.job, a.task));
    Mitigation m = ChooseMitigation(f, c);
    switch (m) {
      case Mitigation::kWait: return;
      case Mitigation::kCopy:
        --allowed;
        --free;
        out->push_back(
            Proposal::LaunchCopy(a.job, a.task, "predictive: p_straggler " + std::to_string(x.est.p_straggler)));
        return;
      case Mitigation::kRestart:  // the task is requeued and relaunched, on this slot if none is better
        s.restarts[a.job][a.task]++;
        out->push_back(Proposal::CancelAttempt(
            a.attempt, "predictive: restart, p_straggler " + std::to_string(x.est.p_straggler) + ", time left " +
                           std::to_string(x.est.time_left) + " s vs fresh " + std::to_string(x.fresh) + " s" +
                           (f.slot_free ? "" : ", no free slot for a copy")));
        return;
    }
  });
  // A task already racing copies: cancel the attempts that are hopeless while
  // another one is not (its slot is better used elsewhere).
  for (auto& [key, as] : multi) {
    if (as.size() < 2) continue;
    const JobView& j = jobs[key.first];
    std::vector<Judged> js;
    bool any_fine = false;
    for (const AttemptView& a : as) {
      Judged x;
      if (!judge(a, j, &x)) {  // too young to judge: counts as fine
        any_fine = true;
        continue;
      }
      if (hopeless(x))
        js.push_back(x);
      else
        any_fine = true;
    }
    if (!any_fine) continue;
    for (const Judged& x : js)
      out->push_back(Proposal::CancelAttempt(
          x.a.attempt, "predictive: drop hopeless attempt, p_straggler " + std::to_string(x.est.p_straggler)));
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
