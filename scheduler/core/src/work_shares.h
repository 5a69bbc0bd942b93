// Speed-proportional work (docs/JOBS.md, "Speed-proportional work"): the
// tasks of a divisible job (JobDef::divisible_units) share out its units by
// the measured speed of the executors they are placed on, so a slow but
// healthy executor gets a smaller share instead of straggling.
//
// Shares are fixed once per job, when its tasks are first placed, and never
// re-split: a retried, restarted or copied task runs the same share wherever
// it lands (results of copies stay interchangeable and the shares keep
// summing to the total). The next round (the next job) is sized again from
// the speeds learned meanwhile.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tailcut/common/status.h"
#include "tailcut/predictors/predictor.h"
#include "tailcut/core/types.h"
#include "tailcut/core/job.h"

namespace tailcut::core {

// Shares are apportioned in double arithmetic, exact below 2^53 units.
inline constexpr uint64_t kMaxDivisibleUnits = uint64_t{1} << 53;
// A peer's speed factor (run time / typical) is clamped to
// [1/kMaxSpeedFactor, kMaxSpeedFactor]: no executor gets more than
// kMaxSpeedFactor^2 times another's share from one outlier measurement.
inline constexpr double kMaxSpeedFactor = 20;

// InvalidArgument unless a divisible job has rule `all` (every share is
// needed for the total) and tasks <= divisible_units <= kMaxDivisibleUnits.
Status ValidateDivisible(const JobDef& def);

// Shares of `total` units for tasks whose executors have these speed
// factors: proportional to 1 / factor (a factor-2 executor gets half the
// share of a factor-1 one). A factor that is not a finite number > 0 counts
// as 1 (unknown); the rest are clamped (kMaxSpeedFactor). Every task gets at
// least one unit when total >= tasks, so every executor keeps being
// measured. Counts sum exactly to total, begins are consecutive in task
// order; largest remainder, ties to the lower index (deterministic).
std::vector<WorkShare> SpeedShares(uint64_t total, const std::vector<double>& speed_factors);

// The shares of running divisible jobs; stamps them on launches.
class ShareBook final : public CoreObserver {
 public:
  explicit ShareBook(const PredictorSuite* speeds) : speeds_(speeds) {}
  // A divisible job was accepted (def.divisible_units > 0).
  void Add(JobId id, const JobDef& def);
  // Fixes the shares of jobs that were launched for the first time in
  // `commands` (tasks placed there: their executor's speed factor; tasks
  // not placed yet: a typical executor, 1) and sets LaunchCmd::share on
  // every launch of a divisible job. The jobs whose shares it fixed are
  // added to `fixed`.
  void Stamp(std::vector<Command>* commands, std::vector<JobId>* fixed);
  // What the predictors learn from an attempt: a task of a divisible job
  // as if it had run an equal share (its run time x (total / tasks) /
  // count; its input_size already describes an equal share), so speed
  // factors measure time per unit and a small share on a slow executor is
  // not mistaken for a fast executor. Other attempts unchanged.
  AttemptRecord ForPredictors(const AttemptRecord& r) const;
  // Shares an earlier run fixed (units per task), run by attempts from
  // `since` on: false, and nothing kept, unless they fit the job (one per
  // task, summing to its total).
  bool Restore(JobId id, const std::vector<uint64_t>& counts, AttemptId since);
  // Whether the job's shares came back from an earlier run (Restore).
  bool Restored(JobId id) const { return RestoredSince(id) != 0; }
  // Their `since`, or 0 when they did not come back.
  AttemptId RestoredSince(JobId id) const;
  std::vector<uint64_t> Counts(JobId id) const;  // empty until fixed
  void OnJobFinished(const JobStatusInfo& j) override { jobs_.erase(j.id); }
  size_t size() const { return jobs_.size(); }

 private:
  struct Entry {
    uint64_t total = 0;
    uint32_t tasks = 0;
    std::vector<WorkShare> shares;  // empty until fixed
    AttemptId restored_since = 0;   // > 0: restored (Restore)
  };
  const PredictorSuite* speeds_;
  std::unordered_map<JobId, Entry> jobs_;
};

}  // namespace tailcut::core
