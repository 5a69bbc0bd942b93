#include "tailcut/plugins/predictive.h"

#include "policy_util.h"
#include "tailcut/predictors/predictor.h"

namespace tailcut {

using namespace policy_util;

Status LoadPredictiveOptions(const Config& cfg, const std::string& prefix, PredictiveOptions* o) {
  Params p{cfg, prefix};
  p.Get("speed_threshold", &o->speed_threshold)
      .Get("p_straggler", &o->p_straggler)
      .Get("min_runtime_s", &o->min_runtime_s)
      .Get("min_samples", &o->min_samples)
      .Get("fallback_quantile", &o->fallback_quantile)
      .Get("fallback_multiplier", &o->fallback_multiplier)
      .Get("speculate_coded", &o->speculate_coded)
      .Check(o->speed_threshold > 1, "speed_threshold must be > 1")
      .Check(o->p_straggler > 0 && o->p_straggler <= 1, "p_straggler must be in (0, 1]")
      .Check(o->min_runtime_s >= 0, "min_runtime_s must be >= 0")
      .Check(o->fallback_quantile > 0 && o->fallback_quantile <= 1, "fallback_quantile must be in (0, 1]")
      .Check(o->fallback_multiplier >= 1, "fallback_multiplier must be >= 1");
  return p.status;
}

struct PredictivePolicy::State {
  State(SlowdownTracker::Options t, SparkOptions s) : tracker(t), fallback(s, "predictive") {}
  SlowdownTracker tracker;
  SparkPolicy fallback;
  CopiedTasks copied;
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
  uint32_t allowed = v.CopiesAllowed();
  v.ForEachRunningAttempt([&](const AttemptView& a) {
    if (a.task_live != 1) {
      s.copied.Add(a.job, a.task);
      return;
    }
    auto jt = jobs.find(a.job);
    if (allowed == 0 || jt == jobs.end() || s.copied.Has(a.job, a.task)) return;
    if (!o_.speculate_coded && !PlainJob(jt->second)) return;
    double el = Elapsed(v, a);
    if (el < o_.min_runtime_s) return;
    const TaskDef& d = jt->second.def->Task(a.task);
    RunningAttempt ra;
    ra.attempt = a.attempt;
    ra.executor = a.executor;
    ra.task_class = d.ClassName();
    ra.input_size = d.input_size;
    ra.elapsed = el;
    ra.progress = a.progress;
    StragglerEstimate est = pred->Assess(ra);
    if (est.p_straggler < o_.p_straggler) return;
    --allowed;
    out->push_back(Proposal::LaunchCopy(a.job, a.task, "predictive: p_straggler " + std::to_string(est.p_straggler)));
  });
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
