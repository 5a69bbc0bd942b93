// Replays for the `default` selector (issue 39; docs/POLICIES.md, "The
// default: chosen per class by replay"). The selector learns a model of
// each task class online (its task-time law from finished and cut-short
// attempts, how much of a task's slowness every attempt of it shares, the
// fleet's slots and slow executors, the arrivals) and asks a ReplayEngine
// to run the candidate policies on it. The engine is the simulator, which
// policies/ may not link: the program that builds the chain injects one
// (PolicyServices, tailcut/policies/registry.h). Without an engine the
// selector keeps its first candidate.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tailcut/common/status.h"

namespace tailcut {

// Another class sharing the fleet, as the selector has seen it: the load
// the replayed class runs beside (the best timeout moves with load).
struct ReplayLoad {
  bool closed = false;  // one job at a time
  double job_rate = 0;  // open arrivals: jobs per second
  uint32_t tasks = 1, needed = 1;
  std::vector<double> times;  // its first attempts' run times (s), the most recent
};

// One class as the selector has seen it. Plain data: the engine may copy it
// to another thread.
struct ReplayModel {
  std::string task_class;
  uint32_t executors = 1, slots = 1;
  // Per executor, its run-time multiple (1 = typical; 5 = five times
  // slower); executors without evidence are 1.
  std::vector<double> executor_factors;
  bool closed = false;  // one job of the class at a time
  double job_rate = 0;  // open arrivals: jobs per second
  uint32_t tasks = 1;   // per job
  uint32_t needed = 1;  // commits that finish a job (< tasks: any `needed` of them, k_of_n)
  // First attempts' run times on a typical executor (s): finished ones as
  // measured, cut-short ones (cancelled, or lost a race) at the predicted
  // total given how far they had got (at least their elapsed time).
  std::vector<double> times;
  // Share of draws a repeated attempt of a task shares with its first (0:
  // slowness belongs to the attempt, a copy is a fresh draw; 1: to the task,
  // every attempt of it is as long), learned from races.
  double task_share = 0;
  // The other classes on the fleet (at most ReplayModel::kMaxOthers, the
  // busiest): replayed beside it as another owner's streams, under the same
  // candidate; only this class's jobs are scored.
  static constexpr size_t kMaxOthers = 4;
  std::vector<ReplayLoad> others;
  double network_s = 0.00015;  // one-way message delay
  uint32_t jobs = 300;         // jobs to replay
  uint64_t seed = 1;
  // Paired replays: each candidate runs on `seeds` workloads (the first
  // drawn from `seed`), every candidate on the same ones.
  uint32_t seeds = 1;
};

// What a candidate did in a replay.
struct ReplayScore {
  std::string candidate;  // a --policy entry ("clone+predictive+reassign")
  bool ran = false;       // false: refused (e.g. single-tenant with [owners])
  double p50 = 0, p99 = 0, p999 = 0, extra_work = 0;  // the means over the seeds
  std::vector<double> p50s, p99s;                     // per seed, in the model's seed order
};

class ReplayEngine {
 public:
  virtual ~ReplayEngine() = default;
  // Starts replaying `m` under each candidate. At most one replay is in
  // flight per engine; Start while one is returns false (try later).
  virtual bool Start(const ReplayModel& m, const std::vector<std::string>& candidates) = 0;
  // The finished replay's scores, once (true), or false while it runs (or
  // when none was started). A synchronous engine finishes within Start.
  virtual bool Poll(std::vector<ReplayScore>* out) = 0;
};

// What the registry hands the policies it builds besides their config.
struct PolicyServices {
  // Makes one engine per selector (each owns its replay in flight); null:
  // no replay.
  std::function<std::unique_ptr<ReplayEngine>()> replay;
};

}  // namespace tailcut
