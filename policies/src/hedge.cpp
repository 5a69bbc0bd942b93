#include "tailcut/policies/hedge.h"

#include <cmath>

#include "policy_util.h"
#include "tailcut/predictors/predictor.h"

namespace tailcut {

using namespace policy_util;

Status LoadHedgeOptions(const Config& cfg, const std::string& prefix, HedgeOptions* o) {
  TableReader p(cfg, prefix);
  p.Get("quantile", &o->quantile)
      .Get("min_samples", &o->min_samples)
      .Get("min_delay_s", &o->min_delay_s)
      .Get("speculate_coded", &o->speculate_coded)
      .Check(o->quantile > 0 && o->quantile < 1, "quantile must be in (0, 1)")
      .Check(o->min_samples >= 1, "min_samples must be >= 1")
      .Check(o->min_delay_s >= 0, "min_delay_s must be >= 0");
  return p.status();
}

struct HedgePolicy::State {
  CopiedTasks hedged;
};

HedgePolicy::HedgePolicy(HedgeOptions o) : o_(o), st_(std::make_shared<State>()) {}

namespace {
// The q-quantile from a predictor's median/p90/p99, interpolated in log space.
double FromEstimate(const LatencyEstimate& e, double q) {
  auto lerp = [](double a, double b, double f) { return std::exp(std::log(a) + f * (std::log(b) - std::log(a))); };
  if (e.median <= 0 || e.p90 <= 0 || e.p99 <= 0) return 0;
  if (q <= 0.5) return e.median;
  if (q <= 0.9) return lerp(e.median, e.p90, (q - 0.5) / 0.4);
  return lerp(e.p90, e.p99, std::min(1.0, (q - 0.9) / 0.09));
}
}  // namespace

void HedgePolicy::OnTick(const ClusterView& v, std::vector<Proposal>* out) {
  auto jobs = JobsById(v);
  st_->hedged.Prune(jobs);
  uint32_t allowed = v.CopiesAllowed();
  if (allowed == 0) return;
  std::unordered_map<JobId, double> job_cut;  // from the job's own run times
  for (auto& [id, j] : jobs) {
    if (!o_.speculate_coded && !PlainJob(j)) continue;
    const auto& rt = v.CommittedRunTimes(id);
    job_cut[id] = rt.size() >= o_.min_samples ? Quantile(rt, o_.quantile) : 0;
  }
  const PredictorSuite* pred = v.Predictors();
  v.ForEachRunningAttempt([&](const AttemptView& a) {
    if (allowed == 0) return;
    if (a.task_live != 1) {
      st_->hedged.Add(a.job, a.task);
      return;
    }
    auto it = job_cut.find(a.job);
    if (it == job_cut.end() || st_->hedged.Has(a.job, a.task)) return;
    double cut = it->second;
    if (cut <= 0 && pred) {  // too few samples of its own: ask the predictor
      const TaskDef& d = jobs[a.job].def->Task(a.task);
      LatencyEstimate e = pred->Predict(d.ClassName(), d.input_size, 0);
      if (e.samples >= o_.min_samples) cut = FromEstimate(e, o_.quantile);
    }
    if (cut <= 0) return;
    double el = Elapsed(v, a);
    if (el <= std::max(cut, o_.min_delay_s)) return;
    --allowed;
    out->push_back(Proposal::LaunchCopy(a.job, a.task, "hedge: past p" + std::to_string(int(o_.quantile * 100))));
  });
}

StatusOr<std::unique_ptr<MitigationPolicy>> MakeHedgePolicy(const Config& cfg, const std::string& prefix) {
  HedgeOptions o;
  if (Status s = LoadHedgeOptions(cfg, prefix, &o); !s.ok()) return s;
  return std::unique_ptr<MitigationPolicy>(std::make_unique<HedgePolicy>(o));
}

}  // namespace tailcut
