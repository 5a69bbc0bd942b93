#include "tailcut/plugins/reassign.h"

#include <unordered_map>
#include <unordered_set>

#include "policy_util.h"
#include "tailcut/predictors/predictor.h"

namespace tailcut {

using namespace policy_util;

Status LoadReassignOptions(const Config& cfg, const std::string& prefix, ReassignOptions* o) {
  TableReader p(cfg, prefix);
  p.Get("factor", &o->factor)
      .Get("min_samples", &o->min_samples)
      .Get("window", &o->window)
      .Get("quantile", &o->quantile)
      .Get("alpha", &o->alpha)
      .Get("probation_s", &o->probation_s)
      .Get("max_probation_s", &o->max_probation_s)
      .Get("probe_samples", &o->probe_samples)
      .Get("copy_running", &o->copy_running)
      .Get("use_predictor", &o->use_predictor)
      .Get("restart", &o->restart)
      .Check(o->factor > 1, "factor must be > 1")
      .Check(o->min_samples >= 1, "min_samples must be >= 1")
      .Check(o->window >= 1, "window must be >= 1")
      .Check(o->quantile >= 0 && o->quantile <= 1, "quantile must be in [0, 1]")
      .Check(o->alpha > 0 && o->alpha <= 1, "alpha must be in (0, 1]")
      .Check(o->probation_s > 0, "probation_s must be > 0")
      .Check(o->max_probation_s >= o->probation_s, "max_probation_s must be >= probation_s");
  return p.status();
}

struct ReassignPolicy::State {
  explicit State(SlowdownTracker::Options t) : tracker(t) {}
  SlowdownTracker tracker;
  struct Q {
    Time since = 0;
    double probation = 0;
  };
  std::unordered_map<ExecutorId, Q> quarantined;          // by us
  std::unordered_map<ExecutorId, double> probation;       // next probation per executor
  std::unordered_map<ExecutorId, uint32_t> probing;       // released: samples at release
};

ReassignPolicy::ReassignPolicy(ReassignOptions o)
    : o_(o),
      st_(std::make_shared<State>(SlowdownTracker::Options{o.alpha, o.min_samples, o.window})) {}

void ReassignPolicy::OnTick(const ClusterView& v, std::vector<Proposal>* out) {
  State& s = *st_;
  s.tracker.Update(v);
  const PredictorSuite* pred = o_.use_predictor ? v.Predictors() : nullptr;
  Time now = v.Now();

  std::vector<ExecutorView> execs;
  v.ForEachExecutor([&](const ExecutorView& e) { execs.push_back(e); });
  std::unordered_set<ExecutorId> present;
  for (auto& e : execs) present.insert(e.id);
  for (auto it = s.quarantined.begin(); it != s.quarantined.end();)
    it = present.count(it->first) ? std::next(it) : s.quarantined.erase(it);

  std::unordered_set<ExecutorId> flagged;
  std::unordered_map<ExecutorId, double> level;  // robust slowdown of flagged executors
  for (const ExecutorView& e : execs) {
    double robust = s.tracker.RecentQuantile(e.id, o_.quantile);
    auto q = s.quarantined.find(e.id);
    if (q != s.quarantined.end()) {
      // Release: the predictor saw it recover, or probation is over. Its
      // samples are kept; it is judged again after `probe_samples` new ones.
      bool recovered = pred && (pred->Health(e.id).state == NodeHealth::kHealthy ||
                                pred->Health(e.id).state == NodeHealth::kRecovered) &&
                       now - q->second.since >= o_.probation_s / 4;
      if (recovered || now - q->second.since >= q->second.probation) {
        out->push_back(Proposal::Release(e.id, recovered ? "reassign: recovered" : "reassign: probation over"));
        if (recovered) {
          s.tracker.Forget(e.id);
          s.probing.erase(e.id);
        } else {
          s.probing[e.id] = s.tracker.Samples(e.id);
        }
        s.quarantined.erase(q);
      } else if (e.quarantined) {
        flagged.insert(e.id);
        level[e.id] = std::max(robust, o_.factor);
      }
      continue;
    }
    if (auto pr = s.probing.find(e.id); pr != s.probing.end()) {
      if (s.tracker.Samples(e.id) < pr->second + o_.probe_samples) continue;  // not enough new evidence yet
      s.probing.erase(pr);
    }
    // Validated signal: most of the executor's recent work was >= factor x
    // typical (a low quantile of the window, so random stragglers cannot
    // pass), and, with a predictor, its CUSUM detector confirms fail-slow.
    if (robust < o_.factor) continue;
    if (pred && pred->Health(e.id).state != NodeHealth::kFailSlow) continue;
    std::string why = "reassign: fail-slow (recent work >= " + std::to_string(robust) + "x typical" +
                      (pred ? ", predictor confirms)" : ")");
    if (!e.quarantined) out->push_back(Proposal::Quarantine(e.id, why));
    double& p = s.probation[e.id];
    p = p == 0 ? o_.probation_s : std::min(2 * p, o_.max_probation_s);
    s.quarantined[e.id] = {now, p};
    flagged.insert(e.id);
    level[e.id] = robust;
  }
  if (!o_.copy_running || flagged.empty()) return;
  auto jobs = JobsById(v);
  uint32_t allowed = v.CopiesAllowed();
  uint64_t free = 0;
  for (const ExecutorView& e : execs)
    if (!e.quarantined && !flagged.count(e.id) && e.slots > e.used_slots) free += e.slots - e.used_slots;
  v.ForEachRunningAttempt([&](const AttemptView& a) {
    if (!flagged.count(a.executor) || a.task_live != 1) return;
    auto jt = jobs.find(a.job);
    if (jt == jobs.end() || !PlainJob(jt->second)) return;
    // Mantri's kill-and-restart rule: the remaining time here, about
    // slowdown x typical - elapsed, exceeds a fresh run's typical time.
    double typical = v.MedianRunTime(a.job);
    if (pred) {
      const TaskDef& d = jt->second.def->Task(a.task);
      LatencyEstimate est = pred->Predict(d.ClassName(), d.input_size, 0);
      if (est.known() && est.median > 0) typical = est.median;
    }
    double slowdown = level.count(a.executor) ? level[a.executor] : o_.factor;
    bool restart = o_.restart && typical > 0 && Elapsed(v, a) < (slowdown - 1) * typical;
    std::string where = std::to_string(a.executor);
    if (free > 0 && allowed > 0) {
      --allowed;
      --free;
      out->push_back(Proposal::LaunchCopy(a.job, a.task, "reassign: off fail-slow executor " + where));
      if (restart) out->push_back(Proposal::CancelAttempt(a.attempt, "reassign: restarted off fail-slow executor " + where));
      return;
    }
    // No room for a copy: cancel it (requeued ahead of new work) if that is
    // expected to finish sooner.
    if (restart) out->push_back(Proposal::CancelAttempt(a.attempt, "reassign: restart off fail-slow executor " + where));
  });
}

StatusOr<std::unique_ptr<MitigationPolicy>> MakeReassignPolicy(const Config& cfg, const std::string& prefix) {
  ReassignOptions o;
  if (Status s = LoadReassignOptions(cfg, prefix, &o); !s.ok()) return s;
  return std::unique_ptr<MitigationPolicy>(std::make_unique<ReassignPolicy>(o));
}

}  // namespace tailcut
