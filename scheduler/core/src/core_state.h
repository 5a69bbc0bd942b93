// The scheduler core's state: jobs, tasks, attempts and executors, and the
// containers whose iteration orders make the core deterministic. Internal to
// tailcut_scheduler_core; the pieces (feasibility, placement, lifecycle,
// proposal gate, cluster view) all work on one CoreState.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dependencies.h"
#include "kernel_names.h"
#include "owner_shares.h"
#include "policy_guard.h"
#include "queue_room.h"
#include "tailcut/common/executor_map.h"
#include "tailcut/common/id_map.h"
#include "tailcut/common/node_pool.h"
#include "tailcut/core/policy.h"
#include "tailcut/core/types.h"
#include "work_shares.h"

namespace tailcut::core {

enum class TaskPhase : uint8_t {
  kUnlaunched,  // never launched
  kActive,      // has live attempts
  kWaiting,     // in the job's retry queue
  kCommitted,
  kDead,  // failed for good, or the job ended first
};

struct Task {
  TaskPhase phase = TaskPhase::kUnlaunched;
  uint8_t live = 0;  // live attempts
  uint16_t failures = 0;
  bool copy_refused = false;  // counted in Job::copies_refused (not idempotent)
  AttemptId live_head = 0;    // first live attempt; the rest chain via Attempt::next
};

struct Attempt {
  AttemptId id = 0;
  JobId job = 0;
  TaskIndex task = 0;
  ExecutorId executor = 0;
  Time queued = 0;
  Time started = -1;
  Time deadline = 0;      // the limit armed now (the heap's key); 0 = none
  Time run_deadline = 0;  // its time limit since launch; `deadline` is the sooner start limit until it starts
  float progress = -1;
  bool copy = false;
  uint32_t slots = 1;
  uint32_t gpus = 0;
  uint64_t memory_mb = 0;
  AttemptId next = 0;  // next live attempt of the same task
  // 1 + the index of its kStarted event in CoreState::policy_events while
  // that may still be queued (EndAttempt drops it: see PolicyEvent).
  uint32_t start_event = 0;
};

// What a task needs of an executor (Feasible and Placement::Fits read no
// more): jobs parked for want of an executor are grouped by it, so a change
// on one executor wakes only the groups it could now take.
struct TaskNeed {
  std::string kernel;
  uint32_t cpu_slots = 1, gpus = 0;
  uint64_t memory_mb = 0;
  std::vector<std::pair<std::string, std::string>> labels;
  auto operator<=>(const TaskNeed&) const = default;
};

struct Job {
  JobId id = 0;
  JobDef def;
  JobState state = JobState::kRunning;
  std::string reason;
  std::string last_error;
  Time submitted = 0;
  Time finished = 0;
  std::vector<Task> tasks;
  TaskIndex next_unlaunched = 0;
  std::deque<TaskIndex> retry;
  uint32_t committed = 0, running = 0, attempts = 0, copies = 0, failed_attempts = 0, dead = 0;
  uint32_t needed = 0;
  uint32_t clone_copies = 0;
  uint32_t copies_refused = 0;    // tasks refused another attempt: not idempotent
  uint32_t copies_preempted = 0;  // its copies cancelled for another job's first attempt
  OwnerState* owner = nullptr;    // while running (OwnerBook forgets owners without jobs)
  std::vector<float> run_times;
  mutable double median_cache = 0;
  mutable size_t median_n = 0;
  double typical_run_s = -1;  // EWMA of committed run times
  Time infeasible_since = -1;
  std::string infeasible_why;
  uint64_t feasibility_epoch = 0;  // CoreState::executors_epoch when last checked
  bool in_runnable = false;        // has an entry in its owner's runnable queue (OwnerBook)
  // Its next task fits no executor now: out of the runnable queue, in
  // CoreState::parked under what that task needs (Placement::Park).
  const TaskNeed* parked = nullptr;
  // Restored after a restart: its tasks that are not idempotent are not
  // launched until CoreState::recovery_hold_until (restore.cpp).
  bool recovery_hold = false;
  bool pipelines = false;  // QueuePerSlot() > 0; kept by Placement::UpdatePipelining()
  std::vector<CommittedOutput> outputs;
  uint32_t promoting = 0;          // committed tasks whose output directory is not promoted yet
  std::vector<JobId> waiting_for;  // parents still running (dependencies.h): not runnable yet
  // Placement::KernelOf's cache: the kernel id (KernelNames) of the
  // TaskDef at `kernel_of` as of the table's epoch `kernel_epoch`. A
  // template's tasks share one TaskDef, so a fan-out looks its kernel up
  // once per change of the table.
  mutable const TaskDef* kernel_of = nullptr;
  mutable uint32_t kernel_id = 0;
  mutable uint64_t kernel_epoch = 0;

  uint32_t Count() const { return def.TaskCount(); }
  // Every needed task committed and its output (output_dir) in place.
  bool Complete() const { return committed >= needed && promoting == 0; }
  bool HasWork() const { return waiting_for.empty() && (!retry.empty() || next_unlaunched < Count()); }
};

struct ExecutorState {
  ExecutorId id = 0;
  ExecutorDesc desc;
  std::unordered_set<std::string> kernels;
  KernelBits kernel_bits;  // `kernels` interned (CoreState::kernel_names)
  uint32_t used_slots = 0;
  uint32_t used_gpus = 0;
  uint64_t used_memory_mb = 0;  // requests of its attempts, queued ones included
  IdSet attempts;               // flat (no node per launch, issue 41); walked sorted or for sums
  uint64_t handed = 0;  // attempts launched on it or adopted by it since it registered
  uint64_t finished = 0;
  bool quarantined = false;
  // Placement::PolicyAvoids, cached: asked again only on events (policy.h).
  bool avoided = false;
  bool in_free = false;          // has its entry in CoreState::free
  bool in_free_avoided = false;  // ... in CoreState::free_avoided
  Time last_seen = 0;
  Time heard_queued = -std::numeric_limits<double>::infinity();  // its newest entry in CoreState::heard
  // ExecutorDesc::identity (or its name), shared with CoreState::held.
  std::shared_ptr<const std::string> identity;
  uint32_t timeouts_in_a_row = 0;  // attempts timed out since its last result
  bool unresponsive = false;       // quarantined for timeouts; no policy releases it
  uint32_t refusals_in_a_row = 0;  // handed back unrun since its last result (not while resting)
  uint32_t rests_in_a_row = 0;     // rests since its last result: each one twice as long
  Time resting_until = -1;         // quarantined for refusals until then (>= 0); no policy releases it
};

// An attempt that was live on an executor when it left: only the same
// identity may later bring back its result or adopt it.
struct HeldAttempt {
  std::shared_ptr<const std::string> identity;
  JobId job = 0;
  TaskIndex task = 0;
};

// An event waiting to be delivered to the policies (SchedulerCore delivers
// them in TakeCommands, after placement).
struct PolicyEvent {
  // kDropped: a kStarted whose attempt ended before it was delivered (its
  // start and end came in one Report): not delivered, OnAttemptEnded
  // carries `attempt.started` (docs/PLUGINS.md; issue 41: an event less per
  // pipelined no-op).
  enum class Kind : uint8_t { kLaunched, kStarted, kProgress, kEnded, kExecutor, kJobEnded, kDropped };
  Kind kind = Kind::kLaunched;
  AttemptView attempt;  // attempt events
  AttemptEnd end;       // kEnded
  ExecutorId executor = 0;
  ExecutorChange change = ExecutorChange::kJoined;
  JobId job = 0;                        // kJobEnded
  JobState state = JobState::kRunning;  // kJobEnded
};

// A wake-up a policy asked for (Proposal::WakeUp); earliest first, then in
// the order asked, so delivery is deterministic.
struct PolicyWakeUp {
  Time at = 0;
  uint64_t seq = 0;
  uint32_t policy = 0;  // index into CoreState::policies
  AttemptId attempt = 0;
  bool operator>(const PolicyWakeUp& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

struct CoreState {
  CoreState(CoreOptions o, const Clock* c, PolicyChain p, std::unique_ptr<PredictorSuite> pred)
      : opt(o),
        clock(c),
        policies(GuardPolicies(std::move(p))),
        predictors(pred ? std::move(pred) : std::make_unique<PredictorSuite>()),
        shares(predictors.get()),
        owner_book(opt.owners) {
    observers.push_back(&shares);  // forgets a job's shares when it finishes
  }

  CoreOptions opt;
  const Clock* clock;
  std::vector<GuardedPolicy> policies;  // called through CallPolicy only
  std::unique_ptr<PredictorSuite> predictors;
  std::vector<CoreObserver*> observers;
  ShareBook shares;      // divisible jobs (work_shares.h)
  DependencyBook deps;   // parents and children (dependencies.h)
  OwnerBook owner_book;  // the runnable queue, per owner and priority (owner_shares.h)

  std::unordered_map<JobId, Job> jobs;
  std::set<JobId> running_jobs;
  std::deque<JobId> finished_order;
  // Live copies (speculation, clones, hedges), oldest first: a first
  // attempt that finds no slot cancels one of another job's (Pump).
  std::set<AttemptId> live_copies;
  // Jobs the last Pump left waiting for a slot: the proposal gate launches
  // no copy onto a slot one of them could use.
  std::vector<JobId> waiting_first;
  // Until then restored jobs (recovery_hold) launch no task that is not
  // idempotent: the executors still running their attempts from before
  // the restart have lost_after_s to register again and have them adopted.
  Time recovery_hold_until = -1;
  std::map<ExecutorId, ExecutorState> executors;
  // executors' records by id, dense (FindExec): an ended attempt, a policy's
  // look at an executor and placement each ask, and a tree walk per ask
  // showed in the profile (issue 41). Kept by Lifecycle::AddExecutor and
  // RemoveExecutor, the only places that add and erase executors.
  ExecutorMap<ExecutorState*> exec_index;
  // The kernels registered executors offer, interned (Feasible's bit test).
  KernelNames kernel_names;
  // Kernels some executor declared not idempotent by default (sticky).
  std::unordered_set<std::string> side_effect_kernels;
  std::deque<ExecutorId> free;          // executors with a free slot, not avoided
  std::deque<ExecutorId> free_avoided;  // ... that a policy advises against
  uint64_t free_slots = 0;              // free slots of executors not quarantined (FreeSlotsOf)
  // Executors by the queue depth at which one more attempt fits them
  // (QueueKey): Placement::PickQueue asks it, not a walk of the fleet.
  // Kept by SyncQueueRoom (ChangeSlots), Lifecycle::AddExecutor and
  // RemoveExecutor.
  QueueRoom queue_room;
  std::vector<PolicyEvent> policy_events;
  std::priority_queue<PolicyWakeUp, std::vector<PolicyWakeUp>, std::greater<>> wakeups;
  uint64_t wakeup_seq = 0;
  // Live attempts. Its nodes come from a pool (common/node_pool.h): one per
  // launch through malloc was a tenth of a no-op's time (issue 41). Still an
  // std::unordered_map (policies walk it: ForEachRunningAttempt), so the
  // order they see is unchanged.
  NodePool attempt_nodes;
  std::pmr::unordered_map<AttemptId, Attempt> attempts{&attempt_nodes};
  // Output directories to promote (PromoteCmd), by (job, task), until the
  // driver answers; they outlive the job's own state (a job that failed
  // keeps the outputs of the tasks it committed).
  std::map<std::pair<JobId, TaskIndex>, PromoteCmd> promotions;
  // Attempts of executors that left (HeldAttempt), oldest first; at most
  // kMaxHeldAttempts: an older one's result is refused and its task reruns.
  static constexpr size_t kMaxHeldAttempts = size_t{1} << 20;
  std::unordered_map<AttemptId, HeldAttempt> held;
  std::deque<AttemptId> held_order;
  std::vector<Command> commands;
  // Time limits: (deadline, attempt or job id), earliest first; entries of
  // attempts or jobs that already ended are skipped when they come up.
  using Deadline = std::pair<Time, uint64_t>;
  using DeadlineHeap = std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>>;
  DeadlineHeap attempt_deadlines, job_deadlines;
  // Timers of running jobs: a quorum's deadline, an infeasible job's grace
  // (Tick checks the job when its entry comes up; stale entries are skipped).
  DeadlineHeap job_timers;
  // Executors resting after refusals: (end of the rest, executor id).
  DeadlineHeap rests;
  // Jobs parked because their next task fits no executor (Placement::Park),
  // by what it needs, in job id order.
  struct ParkedGroup {
    TaskDef need;  // the TaskNeed as a task, for Feasible and Placement::FitsNow
    std::set<JobId> jobs;
  };
  std::map<TaskNeed, ParkedGroup> parked;
  // Liveness without a scan of the fleet: (time, executor) in the order
  // heard, one entry per executor per quarter of lost_after_s at most, so
  // a heartbeat costs O(1) and Tick looks only at the entries now due.
  std::deque<std::pair<Time, ExecutorId>> heard;

  JobId next_job_id = 1;
  AttemptId next_attempt_id = 1;
  // The first attempt id of this run (ReserveIds): attempts below it were
  // launched before a restart, with divisible jobs' shares this run only
  // knows when they came back from the journal.
  AttemptId run_attempt_base = 0;
  // Attempts in [earlier_runs_from, run_attempt_base) were handed out by an
  // earlier run. Those from launches_journaled_from on had their launch
  // journaled: one not restored into `held` (SchedulerCore::RestoreLaunches)
  // is refused. Older ones (a journal from before launches were journaled)
  // are taken from any identity offering the kernel.
  AttemptId earlier_runs_from = 1;
  AttemptId launches_journaled_from = std::numeric_limits<AttemptId>::max();
  ExecutorId next_executor_id = 1;
  ExecutorId rr_cursor = 0;
  uint32_t total_slots = 0;
  uint32_t quarantined = 0;        // executors quarantined now (policies' OnTick runs while any is)
  uint32_t extra_live = 0;         // live attempts beyond the first of each task
  uint64_t queued_tasks = 0;       // tasks of running jobs (core.max_queued_tasks)
  size_t runnable_pipelining = 0;  // runnable entries of jobs with `pipelines`
  uint64_t executors_epoch = 1;    // bumps when executors join or leave
  CoreCounters counters;           // docs/METRICS.md
  Time next_policy_time = 0;
  Time next_idle_refresh = 0;  // SchedulerCore::Impl::RefreshIdlePolicies
  // The scheduler's own lag (issue 25): how much later than the executor's
  // own run time the core sees attempts end, an EWMA over committed
  // attempts, and its jitter, an EWMA of the distance between successive
  // samples. Results queued in this process, network and batching show up
  // here for every attempt at once; ClusterView::RunTime takes ReportLag()
  // (the mean plus twice the jitter: a lag most results arrive within, as
  // a loop turn's jitter is not a straggler either) off an attempt's age,
  // so policies do not read the scheduler's load as stragglers.
  double report_lag = 0, report_lag_jitter = 0, report_lag_last = -1;
  double ReportLag() const { return report_lag + 2 * report_lag_jitter; }
  double typical_run_s = -1;  // EWMA of committed run times, all jobs (CoreOptions::policy_interval_ratio)
  bool dirty = false;         // TakeCommands must Pump first

  Time Now() const { return clock->Now(); }
  // Queues a command for TakeCommands.
  void Emit(Command c);

  Job* FindJob(JobId id) {
    auto it = jobs.find(id);
    return it == jobs.end() ? nullptr : &it->second;
  }
  const Job* FindJob(JobId id) const {
    auto it = jobs.find(id);
    return it == jobs.end() ? nullptr : &it->second;
  }
  // The executor spoke: it is alive now.
  void Heard(ExecutorState& e) {
    Time now = Now();
    e.last_seen = now;
    if (opt.lost_after_s > 0 && now - e.heard_queued >= opt.lost_after_s / 4) {
      heard.emplace_back(now, e.id);
      e.heard_queued = now;
    }
  }
  ExecutorState* FindExec(ExecutorId id) {
    ExecutorState** e = exec_index.Find(id);
    return e ? *e : nullptr;
  }
  const ExecutorState* FindExec(ExecutorId id) const { return const_cast<CoreState*>(this)->FindExec(id); }

  // Queues an event for the policies (none without policies).
  void Post(PolicyEvent e) {
    if (!policies.empty()) policy_events.push_back(std::move(e));
  }
  void PostExecutor(ExecutorId e, ExecutorChange c) {
    PolicyEvent ev;
    ev.kind = PolicyEvent::Kind::kExecutor;
    ev.executor = e;
    ev.change = c;
    Post(std::move(ev));
  }
  void PostAttempt(PolicyEvent::Kind k, const Attempt& a) {
    if (policies.empty()) return;
    PolicyEvent ev;
    ev.kind = k;
    FillView(a, &ev.attempt);
    Post(std::move(ev));
  }
  AttemptView ViewOf(const Attempt& a) const {
    AttemptView v;
    FillView(a, &v);
    return v;
  }
  // ViewOf written in place: a view built aside and copied into the
  // caller's stalled on store forwarding (issue 41).
  void FillView(const Attempt& a, AttemptView* v) const {
    v->attempt = a.id;
    v->job = a.job;
    v->task = a.task;
    v->executor = a.executor;
    v->queued = a.queued;
    v->started = a.started;
    v->progress = a.progress;
    v->copy = a.copy;
    v->task_live = jobs.at(a.job).tasks[a.task].live;
  }

  // Free slots `e` adds to free_slots.
  static uint64_t FreeSlotsOf(const ExecutorState& e) {
    return e.quarantined || e.used_slots >= e.desc.slots ? 0 : e.desc.slots - e.used_slots;
  }
  // Attempts `e` may hold, queued ones included, with `per_slot` queued
  // per slot (Placement::QueuePerSlot) and its own ExecutorDesc::max_queued.
  static uint64_t QueueCap(const ExecutorState& e, uint32_t per_slot) {
    uint64_t cap = static_cast<uint64_t>(e.desc.slots) * (1 + per_slot);
    return e.desc.max_queued ? std::min<uint64_t>(cap, uint64_t{e.desc.slots} + e.desc.max_queued) : cap;
  }
  // The fewest attempts queued per slot at which one more fits `e`
  // (QueueCap(e, key) > used_slots); QueueRoom::kNever when none does.
  static uint32_t QueueKey(const ExecutorState& e) {
    const uint64_t after = uint64_t{e.used_slots} + 1, slots = e.desc.slots;
    if (e.quarantined || (e.desc.max_queued && after > slots + e.desc.max_queued)) return QueueRoom::kNever;
    return after <= slots ? 0 : static_cast<uint32_t>(std::min<uint64_t>((after - 1) / slots, QueueRoom::kNever - 1));
  }
  void SyncQueueRoom(const ExecutorState& e) { queue_room.Set(e.id, QueueKey(e)); }
  // Runs `change` on `e` keeping free_slots and queue_room exact.
  template <typename F>
  void ChangeSlots(ExecutorState& e, F&& change) {
    free_slots -= FreeSlotsOf(e);
    change();
    free_slots += FreeSlotsOf(e);
    SyncQueueRoom(e);
  }

  // Whether task t of `job` may run twice: its own TaskDef::idempotent,
  // else the job's, else its kernel's default.
  bool Idempotent(const Job& job, TaskIndex t) const {
    const TaskDef& d = job.def.Task(t);
    if (d.idempotent) return *d.idempotent;
    if (job.def.idempotent) return *job.def.idempotent;
    return side_effect_kernels.count(d.kernel) == 0;
  }

  // Redundant attempts the budget still allows right now: live copies stay
  // within redundancy_budget of the total slots, but min_copies always fit.
  uint32_t CopiesAllowed() const {
    auto cap =
        std::max<uint32_t>(opt.min_copies, static_cast<uint32_t>(std::floor(opt.redundancy_budget * total_slots)));
    return extra_live >= cap ? 0 : cap - extra_live;
  }
};

// A quorum job's deadline counts from its submission, checked once it may
// run (its parents done): RunJobTimers closes it then.
inline void ArmQuorumDeadline(CoreState& s, const Job& job) {
  const CompletionRule& r = job.def.rule;
  if (r.kind == CompletionKind::kQuorum && r.deadline_s > 0) s.job_timers.push({job.submitted + r.deadline_s, job.id});
}

}  // namespace tailcut::core
