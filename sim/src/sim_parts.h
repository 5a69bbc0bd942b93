// Small pieces of the simulator's loop (simulator.cpp, sim_loop.h): building
// a job of a workload class, recording what the scheduling core reports,
// the executor-side bookkeeping.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "tailcut/common/random.h"
#include "tailcut/core/scheduler_core.h"
#include "tailcut/sim/scenario.h"
#include "tailcut/sim/simulator.h"

namespace tailcut::sim::parts {

// A job of class `c` with `n` tasks running `kernel`.
inline JobDef ClassJob(const JobClass& c, uint32_t n, const char* kernel) {
  JobDef def;
  def.name = c.name;
  def.templ.kernel = kernel;
  def.templ.task_class = c.name;
  def.templ.memory_mb = c.memory_mb;
  def.templ.gpus = c.gpus;
  def.template_count = n;
  def.rule.kind = c.rule;
  if (c.rule != CompletionKind::kAll) def.rule.k = std::min(c.k, n);
  if (c.rule == CompletionKind::kQuorum) {
    def.rule.min_count = std::min(c.min_count, def.rule.k);
    def.rule.deadline_s = c.deadline_s;
  }
  return def;
}

// The core's observer hooks into the result.
inline void RecordAttempt(SimResult* r, const AttemptRecord& a) {
  // Where and when each attempt ran, in the order they ended.
  uint64_t launch_ns = static_cast<uint64_t>(std::llround(a.queued * 1e9));
  r->placements = Mix(r->placements ^ Mix(a.job * 0x9e3779b97f4a7c15ULL ^ Mix(a.task ^ (a.executor << 32)) ^
                                          Mix(launch_ns ^ (uint64_t{a.copy} << 63))));
  if (a.outcome != AttemptOutcome::kCommitted) return;
  r->committed_s += a.run_s;
  ++r->committed;
}
inline void RecordJob(SimResult* r, const JobStatusInfo& j) {
  if (j.id > r->latencies.size()) r->latencies.resize(j.id, std::nan(""));
  r->latencies[j.id - 1] = j.finished - j.submitted;
  ++r->jobs;
  if (j.state != JobState::kSucceeded) {
    ++r->failed;
    r->last_failure = j.reason;
  }
}

// The end of a run: times, what is unfinished, the summary.
inline void FinishRun(SimResult* r, double virtual_s, uint64_t unfinished,
                      std::chrono::steady_clock::time_point wall0) {
  r->virtual_s = virtual_s;
  r->unfinished = unfinished;
  r->wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  Summarise(r);
}

// Removes `id` from an executor's running list (order does not matter).
inline void RemoveFrom(std::vector<AttemptId>& v, AttemptId id) {
  auto it = std::find(v.begin(), v.end(), id);
  if (it == v.end()) return;
  *it = v.back();
  v.pop_back();
}

}  // namespace tailcut::sim::parts
