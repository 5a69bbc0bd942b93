// Shared pieces of the built-in policies (internal header).
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tailcut/common/config.h"
#include "tailcut/common/executor_map.h"
#include "tailcut/common/status.h"
#include "tailcut/core/policy.h"
#include "tailcut/predictors/predictor.h"

namespace tailcut::policy_util {

// Elapsed time of an attempt: the time it has run (ClusterView::RunTime),
// 0 while it waits in its executor's queue.
inline double Elapsed(const ClusterView& v, const AttemptView& a) { return v.RunTime(a); }

// q-quantile (0..1) by nearest rank; 0 for an empty vector.
inline double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, v.size() - 1);
  double f = pos - static_cast<double>(lo);
  return v[lo] * (1 - f) + v[hi] * f;
}

inline double Quantile(const std::vector<float>& v, double q) {
  return Quantile(std::vector<double>(v.begin(), v.end()), q);
}

// Speculative policies leave k_of_n (coded) and quorum jobs alone: coding and
// over-selection already are their redundancy (see docs/POLICIES.md).
inline bool PlainJob(const JobView& j) { return j.def && j.def->rule.kind == CompletionKind::kAll; }

// Jobs by id for one tick.
inline std::unordered_map<JobId, JobView> JobsById(const ClusterView& v) {
  std::unordered_map<JobId, JobView> m;
  v.ForEachJob([&](const JobView& j) { m[j.id] = j; });
  return m;
}

// Remembers which (job, task) pairs a policy already copied, so each task
// gets at most one copy from it; forgets jobs that are no longer running.
class CopiedTasks {
 public:
  bool Has(JobId j, TaskIndex t) const {
    auto it = m_.find(j);
    return it != m_.end() && it->second.count(t);
  }
  void Add(JobId j, TaskIndex t) { m_[j].insert(t); }
  void Forget(JobId j, TaskIndex t) {
    if (m_.empty()) return;  // the usual case, asked per ended attempt
    auto it = m_.find(j);
    if (it == m_.end()) return;
    it->second.erase(t);
    if (it->second.empty()) m_.erase(it);
  }
  void Prune(const std::unordered_map<JobId, JobView>& running) {
    for (auto it = m_.begin(); it != m_.end();) it = running.count(it->first) ? std::next(it) : m_.erase(it);
  }

 private:
  std::unordered_map<JobId, std::unordered_set<TaskIndex>> m_;
};

// Self-contained per-executor slowdown estimate, for running without
// predictors. Fed by OnAttemptEnded (O(1) per ended attempt): a started
// attempt's duration divided by its job's median committed run time (both
// at least Options::min_time_s, as the health model judges) is one
// sample of its executor's slowdown. Superseded attempts count too: their
// duration is a lower bound, and being beaten by a copy is itself evidence
// of slowness. Samples feed an EWMA and a ring of the last `window` samples
// (for robust, quantile-based judgements).
//
// Reference run time: with a PredictorSuite that knows the task's class, the
// suite's typical (executor-independent) median for it; otherwise the job's
// median committed run time. The job median alone is biased early in a job
// (the first commits are its fastest tasks), which made every executor look
// slow now and then.
class SlowdownTracker {
 public:
  struct Options {
    double alpha = 0.3;        // EWMA weight of the newest sample
    uint32_t min_samples = 3;  // Slowdown() is 1 until then
    uint32_t window = 8;       // recent samples kept for RecentQuantile()
    double min_time_s = 0;     // each sample is SlowdownRatio(run, reference, this)
  };
  explicit SlowdownTracker(Options o) : o_(o) {}

  // One ended attempt (MitigationPolicy::OnAttemptEnded). True when it
  // added a sample for a.executor.
  bool OnEnded(const ClusterView& v, const AttemptView& a, const AttemptEnd& end) {
    if (a.started < 0) return false;
    ExecutorView ev;
    if (!v.FindExecutor(a.executor, &ev)) {  // executor left: forget it
      stats_.Erase(a.executor);
      return false;
    }
    double median = Reference(v, a);
    if (median <= 0) return false;
    double ratio = SlowdownRatio(std::max(end.ended - a.started, 0.0), median, o_.min_time_s);
    Stat& st = stats_[a.executor];
    st.ewma = st.samples == 0 ? ratio : (1 - o_.alpha) * st.ewma + o_.alpha * ratio;
    st.samples++;
    if (st.recent.size() < std::max<uint32_t>(o_.window, 1)) {
      st.recent.push_back(static_cast<float>(ratio));
    } else {
      st.recent[st.next] = static_cast<float>(ratio);
      st.next = (st.next + 1) % st.recent.size();
    }
    return true;
  }

  // q-quantile of the last `window` samples of `e`; 1 before min_samples.
  double RecentQuantile(ExecutorId e, double q) const {
    const Stat* st = stats_.Find(e);
    if (!st || st->samples < o_.min_samples) return 1.0;
    return Quantile(st->recent, q);
  }

  // The largest of the last `window` samples of `e` (no quantile of them is
  // above it), without RecentQuantile's copy and sort; 1 before min_samples.
  double RecentMax(ExecutorId e) const {
    const Stat* st = stats_.Find(e);
    if (!st || st->samples < o_.min_samples || st->recent.empty()) return 1.0;
    return *std::max_element(st->recent.begin(), st->recent.end());
  }

  // Estimated run time on `e` / typical run time; 1 when unknown.
  double Slowdown(ExecutorId e) const {
    const Stat* st = stats_.Find(e);
    if (!st || st->samples < o_.min_samples) return 1.0;
    return st->ewma;
  }
  uint32_t Samples(ExecutorId e) const {
    const Stat* st = stats_.Find(e);
    return st ? st->samples : 0;
  }
  // Starts over for `e` (e.g. after a release from quarantine).
  void Forget(ExecutorId e) { stats_.Erase(e); }

 private:
  struct Stat {
    double ewma = 1;
    uint32_t samples = 0;
    std::vector<float> recent;  // ring of the last `window` ratios
    size_t next = 0;
  };

  static double Reference(const ClusterView& v, const AttemptView& a) {
    if (const PredictorSuite* pred = v.Predictors()) {
      JobView j;
      if (v.FindJob(a.job, &j) && j.def && a.task < j.def->TaskCount()) {
        const TaskDef& d = j.def->Task(a.task);
        LatencyEstimate est = pred->Predict(d.ClassName(), d.input_size, 0);
        if (est.known() && est.median > 0) return est.median;
      }
    }
    return v.MedianRunTime(a.job);
  }
  Options o_;
  ExecutorMap<Stat> stats_;  // dense by id: every ended attempt looks here
};

// What the predictors judge of a live attempt of task `d`.
inline RunningAttempt ToRunning(const AttemptView& a, const TaskDef& d, double elapsed) {
  RunningAttempt ra;
  ra.attempt = a.attempt;
  ra.executor = a.executor;
  ra.task_class = d.ClassName();
  ra.input_size = d.input_size;
  ra.elapsed = elapsed;
  ra.progress = a.progress;
  return ra;
}

}  // namespace tailcut::policy_util
