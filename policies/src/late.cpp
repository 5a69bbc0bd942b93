#include "tailcut/policies/late.h"

#include <cmath>
#include <unordered_map>

#include "policy_util.h"

namespace tailcut {

using namespace policy_util;

Status LoadLateOptions(const Config& cfg, const std::string& prefix, LateOptions* o) {
  TableReader p(cfg, prefix);
  p.Get("slow_task_percentile", &o->slow_task_percentile)
      .Get("slow_node_percentile", &o->slow_node_percentile)
      .Get("speculative_cap", &o->speculative_cap)
      .Get("min_runtime_ratio", &o->min_runtime_ratio)
      .Get("min_runtime_s", &o->min_runtime_s)
      .Get("min_slowdown", &o->min_slowdown)
      .Get("speculate_coded", &o->speculate_coded)
      .Check(o->slow_task_percentile > 0 && o->slow_task_percentile <= 1, "slow_task_percentile must be in (0, 1]")
      .Check(o->slow_node_percentile >= 0 && o->slow_node_percentile <= 1, "slow_node_percentile must be in [0, 1]")
      .Check(o->speculative_cap > 0 && o->speculative_cap <= 1, "speculative_cap must be in (0, 1]")
      .Check(o->min_runtime_ratio >= 0, "min_runtime_ratio must be >= 0")
      .Check(o->min_runtime_s >= 0, "min_runtime_s must be >= 0")
      .Check(o->min_slowdown >= 1, "min_slowdown must be >= 1");
  return p.status();
}

LatePolicy::LatePolicy(LateOptions o) : o_(o) {}

void LatePolicy::OnTick(const ClusterView& v, std::vector<Proposal>* out) {
  auto jobs = JobsById(v);
  struct Est {
    JobId job;
    TaskIndex task;
    ExecutorId executor;
    double rel_rate;   // progress rate relative to the job's typical rate (1 = typical)
    double time_left;  // seconds
    bool candidate;    // single live attempt, old enough
    bool has_median;   // rel_rate is relative to the job's committed median
  };
  std::vector<Est> ests;
  uint32_t live_copies = 0;
  v.ForEachRunningAttempt([&](const AttemptView& a) {
    live_copies += a.copy;
    if (a.started < 0) return;
    auto jt = jobs.find(a.job);
    if (jt == jobs.end()) return;
    double el = v.Now() - a.started;
    double median = v.MedianRunTime(a.job);
    double rate, left;
    if (a.progress > 0 && el > 0) {
      rate = a.progress / el;  // LATE: progress score / elapsed
      left = (1 - a.progress) / rate;
    } else if (median > 0) {
      // No progress reports: a task past its median is expected to run on
      // as long as it has overrun (heavy tail): total = max(median, 2 x
      // elapsed - median).
      double total = std::max(median, 2 * el - median);
      rate = 1 / total;
      left = total - el;
    } else {
      return;
    }
    double typical = median > 0 ? 1 / median : 0;
    Est e{a.job,
          a.task,
          a.executor,
          typical > 0 ? rate / typical : rate,
          left,
          a.task_live == 1 && el >= std::max(o_.min_runtime_s, o_.min_runtime_ratio * median) &&
              (o_.speculate_coded || PlainJob(jt->second)),
          median > 0};
    ests.push_back(e);
  });

  // Node scores: mean relative rate of their running attempts.
  std::unordered_map<ExecutorId, std::pair<double, int>> node;
  for (auto& e : ests) {
    node[e.executor].first += e.rel_rate;
    node[e.executor].second++;
  }
  std::vector<double> scores;
  for (auto& [id, s] : node) scores.push_back(s.first / s.second);
  slow_nodes_.clear();
  if (scores.size() >= 2) {
    double cut = Quantile(scores, o_.slow_node_percentile);
    double med = Quantile(scores, 0.5);
    for (auto& [id, s] : node) {
      double sc = s.first / s.second;
      if (sc <= cut && sc * o_.min_slowdown <= med) slow_nodes_.insert(id);
    }
  }

  std::vector<double> rates;
  for (auto& e : ests) rates.push_back(e.rel_rate);
  if (rates.empty()) return;
  double slow_cut = Quantile(rates, o_.slow_task_percentile);
  double med_rate = Quantile(rates, 0.5);
  uint32_t cap = std::max<uint32_t>(1, static_cast<uint32_t>(std::floor(o_.speculative_cap * v.TotalSlots())));
  if (live_copies >= cap) return;
  uint32_t room = std::min(cap - live_copies, v.CopiesAllowed());
  std::vector<const Est*> cands;
  for (auto& e : ests) {
    if (!e.candidate || e.rel_rate > slow_cut) continue;
    // Relative to the job's typical rate when known, else to the running tasks.
    bool slow = e.rel_rate * o_.min_slowdown <= (e.has_median ? 1.0 : med_rate);
    if (slow) cands.push_back(&e);
  }
  std::sort(cands.begin(), cands.end(), [](const Est* a, const Est* b) { return a->time_left > b->time_left; });
  for (const Est* e : cands) {
    if (room == 0) break;
    --room;
    out->push_back(Proposal::LaunchCopy(e->job, e->task, "late: time left " + std::to_string(e->time_left) + " s"));
  }
}

bool LatePolicy::AvoidExecutor(const ClusterView&, ExecutorId e) const { return slow_nodes_.count(e) > 0; }

StatusOr<std::unique_ptr<MitigationPolicy>> MakeLatePolicy(const Config& cfg, const std::string& prefix) {
  LateOptions o;
  if (Status s = LoadLateOptions(cfg, prefix, &o); !s.ok()) return s;
  return std::unique_ptr<MitigationPolicy>(std::make_unique<LatePolicy>(o));
}

}  // namespace tailcut
