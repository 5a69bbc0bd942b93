#include "tailcut/policies/reassign.h"

#include <algorithm>
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
      .Get("min_time_s", &o->min_time_s)
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
      .Check(o->min_time_s >= 0, "min_time_s must be >= 0")
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
  std::unordered_map<ExecutorId, Q> quarantined;     // by us
  std::unordered_map<ExecutorId, double> probation;  // next probation per executor
  std::unordered_map<ExecutorId, uint32_t> probing;  // released: samples at release
};

ReassignPolicy::ReassignPolicy(ReassignOptions o)
    : o_(o), st_(std::make_shared<State>(SlowdownTracker::Options{o.alpha, o.min_samples, o.window, o.min_time_s})) {}

// Release: the predictor saw it recover, or probation is over. Its samples
// are kept; it is judged again after `probe_samples` new ones. Only our own
// quarantined executors are looked at: O(quarantined) per tick.
void ReassignPolicy::OnTick(const ClusterView& v, std::vector<Proposal>* out) {
  State& s = *st_;
  const PredictorSuite* pred = o_.use_predictor ? v.Predictors() : nullptr;
  Time now = v.Now();
  std::vector<ExecutorId> ids;
  for (auto& [id, q] : s.quarantined) ids.push_back(id);
  std::sort(ids.begin(), ids.end());  // deterministic proposal order
  for (ExecutorId id : ids) {
    ExecutorView e;
    if (!v.FindExecutor(id, &e)) {
      s.quarantined.erase(id);
      continue;
    }
    const State::Q q = s.quarantined.at(id);
    bool recovered =
        pred && (pred->Health(id).state == NodeHealth::kHealthy || pred->Health(id).state == NodeHealth::kRecovered) &&
        now - q.since >= o_.probation_s / 4;
    if (recovered || now - q.since >= q.probation) {
      out->push_back(Proposal::Release(id, recovered ? "reassign: recovered" : "reassign: probation over"));
      if (recovered) {
        s.tracker.Forget(id);
        s.probing.erase(id);
      } else {
        s.probing[id] = s.tracker.Samples(id);
      }
      s.quarantined.erase(id);
    } else if (e.quarantined) {
      // Attempts a full cluster had no room to copy before: try again.
      CopyOff(v, id, std::max(s.tracker.RecentQuantile(id, o_.quantile), o_.factor), out);
    }
  }
}

void ReassignPolicy::OnAttemptEnded(const ClusterView& v, const AttemptView& a, const AttemptEnd& end,
                                    std::vector<Proposal>* out) {
  if (st_->tracker.OnEnded(v, a, end)) Judge(v, a.executor, out);
}

void ReassignPolicy::OnExecutorChanged(const ClusterView& v, ExecutorId e, ExecutorChange c,
                                       std::vector<Proposal>* out) {
  State& s = *st_;
  switch (c) {
    case ExecutorChange::kLost:
    case ExecutorChange::kLeft:
      s.quarantined.erase(e);
      s.probing.erase(e);
      s.tracker.Forget(e);
      return;
    case ExecutorChange::kHealthChanged: Judge(v, e, out); return;  // the predictor may confirm now
    default: return;
  }
}

// Validated signal: most of the executor's recent work was >= factor x
// typical (a low quantile of the window, so random stragglers cannot pass),
// and, with a predictor, its CUSUM detector confirms fail-slow. Asked only
// when its evidence changes (a sample, a health change).
void ReassignPolicy::Judge(const ClusterView& v, ExecutorId id, std::vector<Proposal>* out) {
  State& s = *st_;
  // Performance: judged after every ended attempt. On a healthy executor no
  // recent sample reaches `factor`: asked first, that is one lookup in the
  // tracker per ended attempt (issue 41). The quantile (a copy and a sort)
  // comes last. The probing entry below is only dropped later for it, and
  // a probe's sample count only grows, so the verdicts are the same.
  if (s.tracker.RecentMax(id) < o_.factor) return;
  if (s.quarantined.count(id)) return;
  ExecutorView e;
  if (!v.FindExecutor(id, &e)) return;
  const PredictorSuite* pred = o_.use_predictor ? v.Predictors() : nullptr;
  if (auto pr = s.probing.find(id); pr != s.probing.end()) {
    if (s.tracker.Samples(id) < pr->second + o_.probe_samples) return;  // not enough new evidence yet
    s.probing.erase(pr);
  }
  if (pred && pred->Health(id).state != NodeHealth::kFailSlow) return;
  double robust = s.tracker.RecentQuantile(id, o_.quantile);
  if (robust < o_.factor) return;
  std::string why = "reassign: fail-slow (recent work >= " + std::to_string(robust) + "x typical" +
                    (pred ? ", predictor confirms)" : ")");
  if (!e.quarantined) out->push_back(Proposal::Quarantine(id, why));
  double& p = s.probation[id];
  p = p == 0 ? o_.probation_s : std::min(2 * p, o_.max_probation_s);
  s.quarantined[id] = {v.Now(), p};
  CopyOff(v, id, robust, out);
}

// Moves the attempts running on flagged executor `id` elsewhere.
void ReassignPolicy::CopyOff(const ClusterView& v, ExecutorId id, double slowdown, std::vector<Proposal>* out) {
  if (!o_.copy_running) return;
  const PredictorSuite* pred = o_.use_predictor ? v.Predictors() : nullptr;
  uint32_t allowed = v.CopiesAllowed();
  uint64_t free = v.FreeSlots();
  std::string where = std::to_string(id);
  v.ForEachAttemptOn(id, [&](const AttemptView& a) {
    if (a.task_live != 1) return;
    JobView j;
    if (!v.FindJob(a.job, &j) || !PlainJob(j)) return;
    // Mantri's kill-and-restart rule: the remaining time here, about
    // slowdown x typical - elapsed, exceeds a fresh run's typical time.
    double typical = v.MedianRunTime(a.job);
    if (pred) {
      const TaskDef& d = j.def->Task(a.task);
      LatencyEstimate est = pred->Predict(d.ClassName(), d.input_size, 0);
      if (est.known() && est.median > 0) typical = est.median;
    }
    bool restart = o_.restart && typical > 0 && Elapsed(v, a) < (slowdown - 1) * typical;
    if (free > 0 && allowed > 0) {
      --allowed;
      --free;
      out->push_back(Proposal::LaunchCopy(a.job, a.task, "reassign: off fail-slow executor " + where));
      if (restart)
        out->push_back(Proposal::CancelAttempt(a.attempt, "reassign: restarted off fail-slow executor " + where));
      return;
    }
    // No room for a copy: cancel it (requeued ahead of new work) if that is
    // expected to finish sooner.
    if (restart)
      out->push_back(Proposal::CancelAttempt(a.attempt, "reassign: restart off fail-slow executor " + where));
  });
}

StatusOr<std::unique_ptr<MitigationPolicy>> MakeReassignPolicy(const Config& cfg, const std::string& prefix) {
  ReassignOptions o;
  if (Status s = LoadReassignOptions(cfg, prefix, &o); !s.ok()) return s;
  return std::unique_ptr<MitigationPolicy>(std::make_unique<ReassignPolicy>(o));
}

}  // namespace tailcut
