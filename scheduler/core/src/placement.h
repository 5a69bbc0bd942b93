// Placement: which executor an attempt goes to. Keeps the free-slot list,
// the round-robin cursor for queueing behind running work (pipelining of
// tiny tasks) and the queue of runnable jobs with its pipelining counter.
// Which free executor takes a task is the strategy's choice
// (placement_strategy.h, `[core] placement`).
#pragma once

#include <memory>

#include "core_state.h"
#include "placement_strategy.h"

namespace tailcut::core {

class Placement {
 public:
  // `view` is what policies are asked through (MitigationPolicy::AvoidExecutor).
  Placement(CoreState& s, const ClusterView& view);
  ~Placement();

  static bool HasFreeSlot(const ExecutorState& e) { return e.used_slots < e.desc.slots; }
  // Free GPUs and memory on `e` for one more attempt of `d` (slots apart:
  // queued attempts may go past them).
  static bool HasFreeDevices(const ExecutorState& e, const TaskDef& d);
  // Puts `e` on the free-slot list if it has a free slot and may take work,
  // and tells the strategy `e` may have changed (slots, quarantine, speed).
  void MarkFree(ExecutorState& e);
  // `e` leaves the fleet (after its attempts ended).
  void ForgetExecutor(ExecutorId e);
  // Attempt bookkeeping for the strategy (Lifecycle calls these).
  void AttemptLinked(const Job& job, const Attempt& a);
  void AttemptEnded(const Attempt& a);
  // Whether a policy's quarantine of `e` applies (the strategy decides).
  bool AllowsQuarantine(const ExecutorState& e) const;
  const PlacementStrategy& strategy() const { return *strategy_; }

  // An executor with a free slot for this task, or 0 (none, or the strategy
  // has the task wait for a better one). Copies never go where the task
  // already runs, nor to executors a policy advises against.
  // `fallback_only`: taken only when nothing else fits (a restart's old
  // executor, which may be why it lagged).
  ExecutorId PickFree(const Job& job, TaskIndex t, bool copy, ExecutorId preferred = 0, ExecutorId fallback_only = 0);
  // Whether task t of `job` (a copy when `copy`) may run on `e` now: slots,
  // gpus, memory, kernels, not quarantined, and a copy not where the task runs.
  bool Fits(const Job& job, TaskIndex t, const ExecutorState& e, bool copy) const;
  // The same for a first attempt of a task needing `d`.
  static bool FitsNow(const ExecutorState& e, const TaskDef& d);
  // The id of task t's kernel in CoreState::kernel_names, cached on the job.
  uint32_t KernelOf(const Job& job, TaskIndex t) const;
  // Pipelining for tiny tasks: queued attempts allowed per slot.
  uint32_t QueuePerSlot(const Job& job) const;
  // An executor that may queue this task behind its running work, or 0.
  ExecutorId PickQueue(const Job& job, TaskIndex t, uint32_t per_slot);

  bool RunsTask(const Job& job, TaskIndex t, ExecutorId e) const;
  // Whether a policy advises against `e` (MitigationPolicy::AvoidExecutor),
  // as cached by the last RefreshAvoid: O(1).
  bool PolicyAvoids(ExecutorId e) const;
  // Asks the policies again about `e` (on events: policy.h says which).
  void RefreshAvoid(ExecutorState& e);
  // Advice that changes with time alone: after an OnTick `interval_s`
  // after the last, the next share of the fleet, so that the whole fleet
  // is asked again every kAvoidSweepS (or every OnTick when they are
  // further apart): O(fleet) per second, not per OnTick, which tiny tasks
  // bring down to a millisecond.
  static constexpr double kAvoidSweepS = 1.0;
  void RefreshAvoidSweep(double interval_s);
  // How many RefreshAvoid calls were made (tests/core: per-event cost).
  uint64_t avoid_refreshes() const { return avoid_refreshes_; }
  // How many executors PickQueue looked at (tests/core: per-placement cost).
  uint64_t queue_looks() const { return queue_looks_; }

  // The runnable queue (OwnerBook): jobs with tasks to place, per owner by
  // weighted fair share, within an owner by priority, then round-robin.
  void MakeRunnable(Job& job);
  void Requeue(Job& job, TaskIndex t);  // a task waits for another attempt
  void PushRunnable(Job& job);
  // Takes `owner`'s next entry; null when its job is no longer retained.
  Job* PopRunnable(OwnerState& owner);
  void UpdatePipelining(Job& job);
  // `job` is about to be forgotten while it may still have a runnable entry.
  void ForgetJob(const Job& job);

  // Waiting work (docs/PLACEMENT.md, "Waiting work"): task t of `job` fits
  // no executor now (the pump tried every way), so the job leaves the
  // runnable queue and costs nothing until an executor that could take t
  // changes (MarkFree: it joins, frees room, is released; RemoveExecutor:
  // whether t is feasible at all is judged again). Unpark: the job ended.
  void Park(Job& job, TaskIndex t);
  void Unpark(Job& job);
  // `e` leaves: the jobs it could have run are looked at again.
  void WakeFeasibleOn(const ExecutorState& e);

 private:
  // Slots (and devices) for one more attempt of `d` on `e` now, kernel and
  // labels apart.
  static bool HasRoomNow(const ExecutorState& e, const TaskDef& d);
  void CleanFront(bool avoided_list);
  // Wakes the parked groups whose need `fits` says yes to.
  template <typename Pred>
  void Wake(Pred&& fits);
  // Whether a first attempt needing `d` fits `e` once its copies are
  // cancelled (the pump preempts copies for first attempts).
  bool FitsWithoutCopies(const ExecutorState& e, const TaskDef& d) const;
  CoreState& s_;
  const ClusterView& view_;
  std::unique_ptr<PlacementStrategy> strategy_;
  ExecutorId sweep_next_ = 0;  // where RefreshAvoidSweep goes on
  uint64_t avoid_refreshes_ = 0;
  uint64_t queue_looks_ = 0;
};

}  // namespace tailcut::core
