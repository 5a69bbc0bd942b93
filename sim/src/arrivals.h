// The workload's arrival process (`[workload] arrival`: poisson, closed,
// trace), one model for the simulator (one and two tiers) and the
// clairvoyant replay (clairvoyant.cpp), so both see the same jobs at the same
// times for a seed. The caller owns the event queue: this says when.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "draws.h"
#include "tailcut/sim/scenario.h"

namespace tailcut::sim {

class Arrivals {
 public:
  // `fixed`: replay these arrival times instead of the workload's process
  // (the bound of a live run, BoundOptions::arrivals); jobs are still drawn.
  Arrivals(const Scenario& sc, uint64_t seed, const std::vector<double>* fixed = nullptr)
      : sc_(sc), fixed_(fixed), rng_(draws::WorkloadRng(seed)) {
    for (const JobClass& c : sc_.workload.classes) total_weight_ += c.weight;
  }

  // The arrivals queued when a run starts.
  std::vector<double> Initial() {
    if (fixed_) return *fixed_;
    const WorkloadModel& w = sc_.workload;
    switch (w.arrival) {
      case WorkloadModel::Arrival::kPoisson: return {rng_.Exp(1.0 / w.rate)};
      case WorkloadModel::Arrival::kClosed:
        return std::vector<double>(std::min<uint64_t>(w.outstanding, std::max<uint64_t>(w.jobs, 1)), 0.0);
      case WorkloadModel::Arrival::kTrace:
        return sc_.trace.empty() ? std::vector<double>{} : std::vector<double>{sc_.trace[0].submit};
    }
    return {};
  }

  // Whether there is another job to submit after `jobs` jobs of `tasks`
  // tasks in all.
  bool More(uint64_t jobs, uint64_t tasks) const {
    const WorkloadModel& w = sc_.workload;
    if (fixed_) return jobs < fixed_->size();
    if (Trace() && next_trace_ >= sc_.trace.size()) return false;
    if (w.tasks > 0) return tasks < w.tasks;
    return jobs < w.jobs;
  }

  // The job arriving at `now`: a trace job (`trace` >= 0) or a drawn one
  // (`draw`); `then`: when the next one arrives, -1 when that waits for a
  // job to end (closed loop) or none is left.
  struct Next {
    int64_t trace = -1;
    draws::JobDraw draw;
    double then = -1;
  };
  Next Take(double now) {
    Next n;
    if (Trace()) {
      n.trace = static_cast<int64_t>(next_trace_++);
      if (next_trace_ < sc_.trace.size()) n.then = std::max(now, sc_.trace[next_trace_].submit);
      return n;
    }
    // Class by weight, then fan-out, then the gap: from the workload stream
    // only, so every policy sees the same sequence of jobs.
    n.draw = draws::DrawJob(sc_.workload, total_weight_, rng_);
    if (!fixed_ && sc_.workload.arrival == WorkloadModel::Arrival::kPoisson)
      n.then = now + rng_.Exp(1.0 / sc_.workload.rate);
    return n;
  }

  // Closed loop: when the next job comes after one ended at `now` (after the
  // think time) or was refused at submit (at once); -1 for other arrival
  // processes or when nothing is left to submit.
  double AfterEnd(double now, bool refused, uint64_t jobs, uint64_t tasks) const {
    if (fixed_ || sc_.workload.arrival != WorkloadModel::Arrival::kClosed || !More(jobs, tasks)) return -1;
    return refused ? now : now + sc_.workload.think_s;
  }

 private:
  bool Trace() const { return !fixed_ && sc_.workload.arrival == WorkloadModel::Arrival::kTrace; }

  const Scenario& sc_;
  const std::vector<double>* fixed_;
  Rng rng_;
  double total_weight_ = 0;
  size_t next_trace_ = 0;
};

}  // namespace tailcut::sim
