#include "tailcut/plugins/reassign.h"

#include <unordered_map>
#include <unordered_set>

#include "policy_util.h"
#include "tailcut/predictors/predictor.h"

namespace tailcut {

using namespace policy_util;

Status LoadReassignOptions(const Config& cfg, const std::string& prefix, ReassignOptions* o) {
  Params p{cfg, prefix};
  p.Get("factor", &o->factor)
      .Get("min_samples", &o->min_samples)
      .Get("alpha", &o->alpha)
      .Get("probation_s", &o->probation_s)
      .Get("max_probation_s", &o->max_probation_s)
      .Get("copy_running", &o->copy_running)
      .Get("use_predictor", &o->use_predictor)
      .Get("restart", &o->restart)
      .Check(o->factor > 1, "factor must be > 1")
      .Check(o->min_samples >= 1, "min_samples must be >= 1")
      .Check(o->alpha > 0 && o->alpha <= 1, "alpha must be in (0, 1]")
      .Check(o->probation_s > 0, "probation_s must be > 0")
      .Check(o->max_probation_s >= o->probation_s, "max_probation_s must be >= probation_s");
  return p.status;
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
};

ReassignPolicy::ReassignPolicy(ReassignOptions o)
    : o_(o), st_(std::make_shared<State>(SlowdownTracker::Options{o.alpha, o.min_samples})) {}

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
  for (const ExecutorView& e : execs) {
    auto q = s.quarantined.find(e.id);
    if (q != s.quarantined.end()) {
      // Release: the predictor saw it recover, or probation is over (its
      // own statistics start afresh, so it is judged again by new work).
      bool recovered = pred && (pred->Health(e.id).state == NodeHealth::kHealthy ||
                                pred->Health(e.id).state == NodeHealth::kRecovered) &&
                       now - q->second.since >= o_.probation_s / 4;
      if (recovered || now - q->second.since >= q->second.probation) {
        out->push_back(Proposal::Release(e.id, recovered ? "reassign: recovered" : "reassign: probation over"));
        s.tracker.Forget(e.id);
        s.quarantined.erase(q);
      } else if (e.quarantined) {
        flagged.insert(e.id);
      }
      continue;
    }
    bool slow = false;
    std::string why;
    if (pred && pred->Health(e.id).state == NodeHealth::kFailSlow) {
      slow = true;
      why = "reassign: fail-slow (predictor, speed " + std::to_string(pred->Health(e.id).speed_factor) + "x)";
    } else if (s.tracker.Slowdown(e.id) >= o_.factor) {
      slow = true;
      why = "reassign: fail-slow (" + std::to_string(s.tracker.Slowdown(e.id)) + "x slower than job medians)";
    }
    if (!slow) continue;
    if (!e.quarantined) out->push_back(Proposal::Quarantine(e.id, why));
    double& p = s.probation[e.id];
    p = p == 0 ? o_.probation_s : std::min(2 * p, o_.max_probation_s);
    s.quarantined[e.id] = {now, p};
    flagged.insert(e.id);
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
    if (free > 0 && allowed > 0) {
      --allowed;
      --free;
      out->push_back(Proposal::LaunchCopy(a.job, a.task, "reassign: off fail-slow executor " + std::to_string(a.executor)));
      return;
    }
    // No room for a copy: restart it elsewhere (it is requeued ahead of new
    // work) when that is expected to finish sooner, i.e. when the remaining
    // time on the slow executor, slowdown x median - elapsed, exceeds a
    // fresh run, median. Mantri's kill-and-restart rule.
    if (!o_.restart) return;
    double median = v.MedianRunTime(a.job);
    double slowdown = pred ? pred->Health(a.executor).speed_factor : s.tracker.Slowdown(a.executor);
    if (slowdown < o_.factor) slowdown = o_.factor;
    if (median > 0 && Elapsed(v, a) < (slowdown - 1) * median)
      out->push_back(Proposal::CancelAttempt(a.attempt, "reassign: restart off fail-slow executor " +
                                                            std::to_string(a.executor)));
  });
}

StatusOr<std::unique_ptr<MitigationPolicy>> MakeReassignPolicy(const Config& cfg, const std::string& prefix) {
  ReassignOptions o;
  if (Status s = LoadReassignOptions(cfg, prefix, &o); !s.ok()) return s;
  return std::unique_ptr<MitigationPolicy>(std::make_unique<ReassignPolicy>(o));
}

}  // namespace tailcut
