#include "tailcut/policies/spark.h"

#include <cmath>

#include "policy_util.h"

namespace tailcut {

using namespace policy_util;

Status LoadSparkOptions(const Config& cfg, const std::string& prefix, SparkOptions* o) {
  TableReader p(cfg, prefix);
  p.Get("quantile", &o->quantile)
      .Get("multiplier", &o->multiplier)
      .Get("min_runtime_s", &o->min_runtime_s)
      .Get("task_duration_threshold_s", &o->task_duration_threshold_s)
      .Get("min_tasks_for_quantile", &o->min_tasks_for_quantile)
      .Get("efficiency", &o->efficiency)
      .Get("speculate_coded", &o->speculate_coded)
      .Check(o->quantile > 0 && o->quantile <= 1, "quantile must be in (0, 1]")
      .Check(o->multiplier >= 1, "multiplier must be >= 1")
      .Check(o->min_runtime_s >= 0, "min_runtime_s must be >= 0")
      .Check(o->task_duration_threshold_s >= 0, "task_duration_threshold_s must be >= 0")
      .Check(o->efficiency >= 0 && o->efficiency <= 1, "efficiency must be in [0, 1]");
  return p.status();
}

struct SparkPolicy::State {
  CopiedTasks copied;
};

SparkPolicy::SparkPolicy(SparkOptions o, std::string name)
    : o_(o), name_(std::move(name)), st_(std::make_shared<State>()) {}

void SparkPolicy::OnTick(const ClusterView& v, std::vector<Proposal>* out) {
  auto jobs = JobsById(v);
  st_->copied.Prune(jobs);
  if (v.CopiesAllowed() == 0) return;
  struct JobRule {
    double threshold = -1;  // < 0: do not speculate
    double avg_rate = 0;    // input per second, 0 = unknown
  };
  std::unordered_map<JobId, JobRule> rules;
  for (auto& [id, j] : jobs) {
    JobRule r;
    if (!o_.speculate_coded && !PlainJob(j)) {
      rules[id] = r;
      continue;
    }
    uint32_t need = std::max<uint32_t>(1, static_cast<uint32_t>(std::floor(o_.quantile * j.tasks)));
    bool small = j.tasks < o_.min_tasks_for_quantile;
    double median = v.MedianRunTime(id);
    if (!small && j.committed >= need && median > 0)
      r.threshold = std::max(o_.multiplier * median, o_.min_runtime_s);
    else if (o_.task_duration_threshold_s > 0)
      r.threshold = std::max(o_.task_duration_threshold_s, o_.min_runtime_s);
    if (r.threshold >= 0 && o_.efficiency > 0 && median > 0 && j.def) {
      // Typical rate: median input over median committed run time.
      std::vector<double> in;
      for (TaskIndex t = 0; t < j.tasks; ++t) in.push_back(j.def->Task(t).input_size);
      double med_in = Quantile(std::move(in), 0.5);
      if (med_in > 0) r.avg_rate = med_in / median;
    }
    rules[id] = r;
  }
  struct Cand {
    double elapsed;
    JobId job;
    TaskIndex task;
  };
  std::vector<Cand> cands;
  v.ForEachRunningAttempt([&](const AttemptView& a) {
    if (a.task_live != 1) {  // has a copy (ours or another policy's): done with it
      st_->copied.Add(a.job, a.task);
      return;
    }
    auto it = rules.find(a.job);
    if (it == rules.end() || it->second.threshold < 0) return;
    if (st_->copied.Has(a.job, a.task)) return;
    double el = Elapsed(v, a);
    const JobRule& r = it->second;
    if (el <= r.threshold) return;
    if (r.avg_rate > 0 && el <= 2 * r.threshold) {
      double in = jobs[a.job].def->Task(a.task).input_size;
      // Slow only because its input is large: a copy cannot win.
      if (in > 0 && in / el >= o_.efficiency * r.avg_rate) return;
    }
    cands.push_back({el, a.job, a.task});
  });
  std::sort(cands.begin(), cands.end(), [](const Cand& x, const Cand& y) { return x.elapsed > y.elapsed; });
  uint32_t allowed = v.CopiesAllowed();
  for (const Cand& c : cands) {
    if (allowed == 0) break;
    --allowed;  // marked copied once the copy shows up (retried while no slot is free)
    out->push_back(Proposal::LaunchCopy(c.job, c.task, "spark: ran " + std::to_string(c.elapsed) + " s"));
  }
}

StatusOr<std::unique_ptr<MitigationPolicy>> MakeSparkPolicy(const Config& cfg, const std::string& prefix) {
  SparkOptions o;
  if (Status s = LoadSparkOptions(cfg, prefix, &o); !s.ok()) return s;
  return std::unique_ptr<MitigationPolicy>(std::make_unique<SparkPolicy>(o));
}

}  // namespace tailcut
