// A placement strategy: which executor with a free slot takes an attempt,
// or none for now (the task waits for a better one). One file pair per
// strategy, chosen by `[core] placement` (docs/CONFIG.md, docs/PLACEMENT.md):
//   first_free       placement_first_free.{h,cpp}: the executor that became
//                    free first (the behaviour before expected-finish).
//   expected_finish  placement_expected_finish.{h,cpp} (default): where the
//                    task is expected to finish first, from the predictors.
// Placement (placement.h) owns the strategy, keeps the free-slot list, the
// queueing of tiny tasks behind busy executors and the runnable-job queue,
// and tells the strategy about every change it may track.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core_state.h"

namespace tailcut::core {

class Placement;

class PlacementStrategy {
 public:
  virtual ~PlacementStrategy() = default;
  virtual std::string_view name() const = 0;
  // `e` may have changed: a slot freed or taken, quarantined or released,
  // joined, or its speed factor moved.
  virtual void ExecutorChanged(const ExecutorState&) {}
  // `e` leaves (its attempts already ended).
  virtual void ExecutorRemoved(ExecutorId) {}
  // Attempt `a` of `job` became live on its executor, or ended.
  virtual void AttemptLinked(const Job&, const Attempt&) {}
  virtual void AttemptEnded(const Attempt&) {}
  // An executor with a free slot for (job, t), or 0: none, or the task had
  // better wait. `preferred` wins if it fits. Copies never go where the task
  // already runs nor to executors a policy avoids (Placement::Fits,
  // Placement::PolicyAvoids). `fallback_only` (a restart's old executor) is
  // taken like an avoided one: only when nothing else fits.
  virtual ExecutorId PickFree(const Job& job, TaskIndex t, bool copy, ExecutorId preferred,
                              ExecutorId fallback_only) = 0;
  // Whether a policy's proposal to quarantine `e` applies.
  virtual bool AllowsQuarantine(const ExecutorState&) const { return true; }
  // Whether the last PickFree returned 0 while an executor fitted (the task
  // waits for a better one). Such a task is not parked: what makes it take
  // the fitting one (the runnable queue's length) is no executor's change.
  virtual bool HeldLastPick() const { return false; }
};

std::vector<std::string> PlacementStrategyNames();  // "expected_finish", "first_free"
// Null for an unknown name (LoadCoreOptions rejects those).
std::unique_ptr<PlacementStrategy> MakePlacementStrategy(std::string_view name, CoreState& s, Placement& place);

}  // namespace tailcut::core
