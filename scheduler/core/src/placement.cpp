#include "placement.h"

#include <cmath>

#include "feasibility.h"
#include "tailcut/common/log.h"

namespace tailcut::core {

Placement::Placement(CoreState& s, const ClusterView& view)
    : s_(s), view_(view), strategy_(MakePlacementStrategy(s.opt.placement, s, *this)) {
  if (!strategy_) {  // LoadCoreOptions rejects unknown names: a programming error
    TC_LOG(Error) << "unknown placement strategy '" << s.opt.placement << "'; using first_free";
    strategy_ = MakePlacementStrategy("first_free", s, *this);
  }
}

Placement::~Placement() = default;

void Placement::MarkFree(ExecutorState& e) {
  if (!e.in_free && !e.in_free_avoided && !e.quarantined && HasFreeSlot(e)) {
    (e.avoided ? e.in_free_avoided : e.in_free) = true;
    (e.avoided ? s_.free_avoided : s_.free).push_back(e.id);
  }
  strategy_->ExecutorChanged(e);
  if (!s_.parked.empty() && !e.quarantined)
    Wake([&](const TaskDef& d) { return FitsNow(e, d) || FitsWithoutCopies(e, d); });
}

void Placement::ForgetExecutor(ExecutorId e) { strategy_->ExecutorRemoved(e); }
void Placement::AttemptLinked(const Job& job, const Attempt& a) { strategy_->AttemptLinked(job, a); }
void Placement::AttemptEnded(const Attempt& a) { strategy_->AttemptEnded(a); }
bool Placement::AllowsQuarantine(const ExecutorState& e) const { return strategy_->AllowsQuarantine(e); }

bool Placement::Fits(const Job& job, TaskIndex t, const ExecutorState& e, bool copy) const {
  const TaskDef& d = job.def.Task(t);
  return HasRoomNow(e, d) && Feasible(e, d, KernelOf(job, t)) && !(copy && RunsTask(job, t, e.id));
}

bool Placement::FitsNow(const ExecutorState& e, const TaskDef& d) { return HasRoomNow(e, d) && Feasible(e, d); }

bool Placement::HasRoomNow(const ExecutorState& e, const TaskDef& d) {
  uint32_t need = std::max<uint32_t>(d.cpu_slots, 1);
  return !e.quarantined && e.used_slots + need <= e.desc.slots && HasFreeDevices(e, d);
}

uint32_t Placement::KernelOf(const Job& job, TaskIndex t) const {
  const TaskDef& d = job.def.Task(t);
  const uint64_t epoch = s_.kernel_names.epoch();
  if (job.kernel_of != &d || job.kernel_epoch != epoch) {
    job.kernel_of = &d;
    job.kernel_epoch = epoch;
    job.kernel_id = s_.kernel_names.Find(d.kernel);
  }
  return job.kernel_id;
}

bool Placement::HasFreeDevices(const ExecutorState& e, const TaskDef& d) {
  // Memory counts queued (pipelined) attempts too: a queued one holds its
  // request from its launch, so what runs there never exceeds desc.memory_mb.
  return e.used_gpus + d.gpus <= e.desc.gpus &&
         (e.desc.memory_mb == 0 || e.used_memory_mb + d.memory_mb <= e.desc.memory_mb);
}

bool Placement::RunsTask(const Job& job, TaskIndex t, ExecutorId e) const {
  for (AttemptId a = job.tasks[t].live_head; a != 0;) {
    const Attempt& at = s_.attempts.at(a);
    if (at.executor == e) return true;
    a = at.next;
  }
  return false;
}

// Performance: this asked every policy per candidate executor, so placing a
// task cost O(policies x avoided executors ahead of it in the free list);
// at 10,000 executors that was most of the default chain's run time. The
// answer is now cached per executor (RefreshAvoid, on events) and avoided
// executors wait in their own list, so PickFree does not walk past them.
bool Placement::PolicyAvoids(ExecutorId e) const {
  const ExecutorState* x = s_.FindExec(e);
  return x && x->avoided;
}

void Placement::RefreshAvoid(ExecutorState& e) {
  ++avoid_refreshes_;
  bool avoid = false;
  for (auto& p : s_.policies) {
    CallPolicy(p, "AvoidExecutor", [&](const MitigationPolicy& m) { avoid = m.AvoidExecutor(view_, e.id); });
    if (avoid) break;
  }
  if (avoid == e.avoided) return;
  e.avoided = avoid;
  strategy_->ExecutorChanged(e);  // a strategy with its own lists moves it
  if (!avoid && e.in_free_avoided) {  // back to the preferred list; its old entry goes stale
    e.in_free_avoided = false;
    e.in_free = true;
    s_.free.push_back(e.id);
  }  // newly avoided ones leave `free` when they reach its front
}

void Placement::RefreshAvoidSweep(double interval_s) {
  const size_t n = s_.executors.size();
  size_t count = interval_s >= kAvoidSweepS ? n : static_cast<size_t>(std::ceil(n * interval_s / kAvoidSweepS));
  auto it = s_.executors.lower_bound(sweep_next_);
  for (; count > 0 && n > 0; --count) {
    if (it == s_.executors.end()) it = s_.executors.begin();
    RefreshAvoid(it->second);
    ++it;
  }
  sweep_next_ = it == s_.executors.end() ? 0 : it->first;
}

// Drops the front entries of `free` (or of `free_avoided`) that are stale or
// belong to the other list.
void Placement::CleanFront(bool avoided_list) {
  std::deque<ExecutorId>& list = avoided_list ? s_.free_avoided : s_.free;
  while (!list.empty()) {
    ExecutorState* e = s_.FindExec(list.front());
    if (!e) {
      list.pop_front();
      continue;
    }
    bool& mine = avoided_list ? e->in_free_avoided : e->in_free;  // false: a stale duplicate
    if (mine && !e->quarantined && HasFreeSlot(*e) && e->avoided == avoided_list) return;
    list.pop_front();
    if (mine) {
      mine = false;
      MarkFree(*e);  // to the other list when it still has room
    }
  }
}

ExecutorId Placement::PickFree(const Job& job, TaskIndex t, bool copy, ExecutorId preferred,
                               ExecutorId fallback_only) {
  // Whatever the strategy, the free list's front stays valid: Pump stops
  // early when both lists are empty (no slot anywhere).
  CleanFront(false);
  CleanFront(true);
  return strategy_->PickFree(job, t, copy, preferred, fallback_only);
}

uint32_t Placement::QueuePerSlot(const Job& job) const {
  // One lucky fast task must not turn a job into a pipelined one.
  constexpr uint32_t kMinSamples = 4;
  if (job.typical_run_s < 0 || job.committed < kMinSamples) return 0;
  if (job.typical_run_s <= s_.opt.pipeline_s / s_.opt.max_queue_per_slot) return s_.opt.max_queue_per_slot;
  return static_cast<uint32_t>(s_.opt.pipeline_s / job.typical_run_s);
}

ExecutorId Placement::PickQueue(const Job& job, TaskIndex t, uint32_t per_slot) {
  const TaskDef& d = job.def.Task(t);
  uint32_t need = std::max<uint32_t>(d.cpu_slots, 1);
  // Round-robin from the executor after the last one picked, in id order.
  // Only executors whose QueueKey is <= per_slot can take even a one-slot
  // attempt at this depth; queue_room visits just those, in that order,
  // so the first that fits is the one a walk of the whole fleet finds.
  const uint32_t kernel = KernelOf(job, t);
  ExecutorId id = s_.queue_room.Next(s_.rr_cursor, per_slot, [&](ExecutorId id) {
    ++queue_looks_;
    const ExecutorState& e = *s_.FindExec(id);
    return !e.quarantined && e.used_slots + need <= CoreState::QueueCap(e, per_slot) && HasFreeDevices(e, d) &&
           Feasible(e, d, kernel) && !e.avoided;
  });
  if (id) s_.rr_cursor = id;
  return id;
}

void Placement::MakeRunnable(Job& job) {
  if (job.in_runnable || job.state != JobState::kRunning) return;
  job.in_runnable = true;
  PushRunnable(job);
  s_.dirty = true;
}

void Placement::Requeue(Job& job, TaskIndex t) {
  job.tasks[t].phase = TaskPhase::kWaiting;
  job.retry.push_back(t);
  MakeRunnable(job);
}

// runnable_pipelining counts runnable entries whose job has `pipelines`;
// PushRunnable, PopRunnable, UpdatePipelining and ForgetJob keep it exact as
// entries come and go and as the flag changes.
void Placement::PushRunnable(Job& job) {
  s_.owner_book.Push(*job.owner, job.def.priority, job.id);
  if (job.pipelines) s_.runnable_pipelining++;
}

Job* Placement::PopRunnable(OwnerState& owner) {
  JobId id = s_.owner_book.Pop(owner);
  Job* job = s_.FindJob(id);
  if (job && job->pipelines) s_.runnable_pipelining--;
  return job;
}

void Placement::UpdatePipelining(Job& job) {
  bool p = QueuePerSlot(job) > 0;
  if (p == job.pipelines) return;
  job.pipelines = p;
  if (job.in_runnable) p ? s_.runnable_pipelining++ : s_.runnable_pipelining--;
}

void Placement::ForgetJob(const Job& job) {
  if (job.in_runnable && job.pipelines) s_.runnable_pipelining--;
}

// Parked jobs are grouped by what their blocked task needs; a group is
// woken whole (its jobs go back to the runnable queue in id order and the
// pump serves them by the owners' shares again), so a change on an executor
// costs O(groups) and a wake O(jobs woken). Jobs that cannot use the change
// (another took the room first) are parked again by that pump.
void Placement::Park(Job& job, TaskIndex t) {
  const TaskDef& d = job.def.Task(t);
  TaskNeed need{d.kernel, std::max<uint32_t>(d.cpu_slots, 1), d.gpus, d.memory_mb, d.labels};
  auto [it, fresh] = s_.parked.try_emplace(std::move(need));
  if (fresh) {
    TaskDef& n = it->second.need;
    n.kernel = d.kernel;
    n.cpu_slots = it->first.cpu_slots;
    n.gpus = d.gpus;
    n.memory_mb = d.memory_mb;
    n.labels = d.labels;
  }
  it->second.jobs.insert(job.id);
  job.parked = &it->first;
  job.in_runnable = false;
}

void Placement::Unpark(Job& job) {
  if (!job.parked) return;
  auto it = s_.parked.find(*job.parked);
  it->second.jobs.erase(job.id);
  if (it->second.jobs.empty()) s_.parked.erase(it);
  job.parked = nullptr;
}

template <typename Pred>
void Placement::Wake(Pred&& fits) {
  for (auto it = s_.parked.begin(); it != s_.parked.end();) {
    if (!fits(it->second.need)) {
      ++it;
      continue;
    }
    std::set<JobId> woken = std::move(it->second.jobs);
    it = s_.parked.erase(it);
    for (JobId id : woken) {
      Job& job = s_.jobs.at(id);  // parked jobs run (FinishJob unparks)
      job.parked = nullptr;
      MakeRunnable(job);
    }
  }
}

bool Placement::FitsWithoutCopies(const ExecutorState& e, const TaskDef& d) const {
  if (s_.live_copies.empty()) return false;
  uint32_t slots = e.used_slots, gpus = e.used_gpus;
  uint64_t memory = e.used_memory_mb;
  bool any = false;
  e.attempts.ForEach([&](AttemptId id) {  // sums: the order does not matter
    const Attempt& a = s_.attempts.at(id);
    if (!a.copy) return;
    any = true;
    slots -= a.slots;
    gpus -= a.gpus;
    memory -= a.memory_mb;
  });
  return any && slots + std::max<uint32_t>(d.cpu_slots, 1) <= e.desc.slots && gpus + d.gpus <= e.desc.gpus &&
         (e.desc.memory_mb == 0 || memory + d.memory_mb <= e.desc.memory_mb) && Feasible(e, d);
}

void Placement::WakeFeasibleOn(const ExecutorState& e) {
  if (!s_.parked.empty()) Wake([&](const TaskDef& d) { return Feasible(e, d); });
}

}  // namespace tailcut::core
