// The core's shared types: its options, what it is told about executors,
// the commands it emits, the statuses and counters it reports, and the
// observer hook. Split from scheduler_core.h so the core's internals, the
// server's conversions and the journal need not include the SchedulerCore
// class to name them. Plain values: no thread-safety concerns of their own.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "tailcut/common/attempt_record.h"
#include "tailcut/common/clock.h"
#include "tailcut/common/config.h"
#include "tailcut/common/ids.h"
#include "tailcut/common/kernel_args.h"
#include "tailcut/common/status.h"
#include "tailcut/core/job.h"
#include "tailcut/predictors/predictor.h"

namespace tailcut {

// The most tasks one job can ever have: task counts and indexes are uint32,
// and core.max_tasks_per_job may not be set above this.
inline constexpr uint32_t kTaskCountCeiling = 50'000'000;
// Failed attempts per task are counted in 16 bits: max_attempts (config or
// job) may not exceed this.
inline constexpr uint32_t kMaxAttemptsCeiling = 1000;

// Job priorities (JobDef::priority) lie in [-kMaxJobPriority, kMaxJobPriority].
inline constexpr int32_t kMaxJobPriority = 1000;
// Owner weights above this are refused: a share that large is a typo.
inline constexpr double kMaxOwnerWeight = 1e6;

// One owner's part of the fleet ([owners], docs/POLICIES.md "Owners"):
// busy owners get slots in proportion to `weight`; `max_slots` > 0 caps the
// slots its attempts (copies included) hold at once.
struct OwnerShareOptions {
  double weight = 1.0;
  uint32_t max_slots = 0;  // 0 = no quota
};
struct OwnerOptions {
  OwnerShareOptions defaults;                                     // owners not listed
  std::vector<std::pair<std::string, OwnerShareOptions>> owners;  // [[owners.owner]], by name
  const OwnerShareOptions& For(const std::string& owner) const {
    for (const auto& [name, o] : owners)
      if (name == owner) return o;
    return defaults;
  }
};
// [owners] (default_weight, default_max_slots) and its [[owners.owner]]
// entries (name, weight, max_slots) of `cfg` into *out.
Status LoadOwnerOptions(const Config& cfg, std::string_view prefix, OwnerOptions* out);

// Every option with its default; docs/CONFIG.md and configs/scheduler.toml
// document the same keys under [core].
struct CoreOptions {
  double lost_after_s = 2.0;         // executor silence before it is lost
  uint32_t max_attempts = 3;         // failed attempts per task (default)
  double infeasible_grace_s = 10.0;  // wait for a fitting executor to join
  double redundancy_budget = 0.10;   // live copies <= share of total slots
  uint32_t min_copies = 1;           // ... but always allow this many
  // How often policies run (OnTick): every policy_interval_ratio x the
  // typical committed run time (an EWMA over all tasks), within
  // [policy_interval_min_s (a tick's own cost), policy_interval_max_s];
  // every policy_interval_s until a task has committed. Ratio 0: always
  // policy_interval_s.
  double policy_interval_s = 0.1;
  double policy_interval_ratio = 0.25;
  double policy_interval_min_s = 0.001;
  double policy_interval_max_s = 60;
  // Pipelining for tiny tasks: an executor may hold queued attempts beyond
  // its slots, floor(pipeline_s / typical task run time) per slot, capped.
  double pipeline_s = 0.005;
  uint32_t max_queue_per_slot = 512;
  uint32_t job_retention = 1000;  // finished jobs kept for status queries
  // Quarantined executors are capped at this share of the fleet (at least
  // one when there are three or more), so a noisy detector cannot starve
  // the cluster of capacity.
  double max_quarantined_share = 0.1;
  // Which free executor takes a task (docs/PLACEMENT.md): "expected_finish"
  // (where it is expected to finish first, by the predictors' run time and
  // each executor's speed factor) or "first_free" (the one free longest).
  std::string placement = "expected_finish";
  // Whose waiting first attempts copies, clones and hedges give way to
  // (docs/POLICIES.md, "Copies only use idle capacity"): "owner" (the
  // default: other owners' — copies never delay another owner's work, and
  // an owner's own copies still race its stragglers under its share) or
  // "job" (any other job's: no redundancy at all while any first attempt
  // waits, which under a steady backlog turns speculation off).
  std::string copies_yield_to = "owner";
  bool CopiesYieldToJobs() const { return copies_yield_to == "job"; }
  // With expected_finish, a policy's quarantine applies only to executors
  // at least this many times slower than typical; slower-but-useful ones
  // get only the work they finish first.
  double quarantine_speed_factor = 10.0;
  // Time limits (seconds; 0 = none), for jobs and tasks that set none: an
  // attempt older than task_timeout_s (since its launch) is cancelled and
  // counts as a failed attempt; a job running longer than job_timeout_s fails.
  double task_timeout_s = 0;
  double job_timeout_s = 0;
  // Every attempt ends: without a task timeout_s or task_timeout_s, an
  // attempt's limit is attempt_timeout_ratio x its task class's predicted
  // p99 run time on its executor, at least attempt_timeout_floor_s and at
  // most attempt_timeout_ceiling_s (the limit while the run time is not
  // known yet). Armed at launch, so an executor that takes work and never
  // answers cannot hold it. Ratio 0: no default limit (the simulator's).
  double attempt_timeout_ratio = 10;
  double attempt_timeout_floor_s = 30;
  // An attempt launched onto a free slot must be reported started within
  // attempt_timeout_ratio x its class's predicted p99, at least this (a
  // round trip and a process start), else it times out like the above: an
  // executor that heart-beats but never starts its work holds it about as
  // long as the class runs, not 30 s. While the class is unknown: the floor
  // above.
  double attempt_start_floor_s = 5;
  double attempt_timeout_ceiling_s = 86400;
  // An executor whose last this-many attempts all timed out, with no result
  // between them, is quarantined until it registers again (0 = never).
  uint32_t unresponsive_after_timeouts = 3;
  // An executor that hands back this many attempts in a row unrun (REFUSED:
  // over its caps, an edge handing back the rest of a round, or a peer gone
  // bad) rests: no new work for rest_s, doubled with each further refusal
  // up to max_rest_s; a result (success or failure) ends the run of
  // refusals (0 = never rests). Without it a peer that refuses everything
  // at once is always the freest and takes every task and copy first.
  uint32_t rest_after_refusals = 3;
  double rest_s = 0.1;
  double max_rest_s = 30;
  // An attempt lost with its executor (started or only assigned) counts as
  // a failed attempt, so a poison task that crashes its executors fails its
  // job after max_attempts of them. The simulator's default is false.
  bool count_executor_loss = true;
  // Admission (docs/LIMITS.md). Each task of an unfinished job costs the
  // core ~20 bytes whatever its size on the wire (a 40-byte template can ask
  // for millions), so both are checked before anything is allocated.
  uint32_t max_tasks_per_job = 1'000'000;  // larger jobs: TOO_LARGE
  uint32_t max_queued_tasks = 4'000'000;   // tasks of unfinished jobs in all; over it: BUSY
  // Owners' weights and quotas: [owners], not [core] (LoadOwnerOptions).
  OwnerOptions owners;
};
Status LoadCoreOptions(const Config& cfg, std::string_view prefix, CoreOptions* out);

struct ExecutorDesc {
  std::string name;
  std::string host;
  uint32_t slots = 1;
  uint32_t gpus = 0;
  // What its attempts' memory requests may add up to; 0 = it does not say,
  // and requests are not checked against it (docs/JOBS.md, "Memory").
  uint64_t memory_mb = 0;
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<std::string> kernels;  // exactly the kernels it runs; empty: none
  // Of `kernels`, those not idempotent by default (shell, exec, plugins'):
  // their tasks get no copies unless the job says they are idempotent. Once
  // one executor names a kernel here, the core keeps it so (the safe side).
  std::vector<std::string> side_effect_kernels;
  // Of `kernels`, those that declare their key=value arguments
  // (Register.kernel_args): a task of one whose arguments no offering
  // executor's kernel takes is refused at submit. Absent: takes anything.
  std::map<std::string, std::vector<KernelArgSpec>> kernel_args;
  uint32_t max_queued = 0;  // queued beyond slots it accepts; 0 = no cap
  // Who it is across registrations (the server: its key and name); empty:
  // its name. Results and adoptions of attempts it held under an earlier
  // executor id are accepted only from the same identity.
  std::string identity;
};

struct JobStatusInfo {
  JobId id = 0;
  std::string name;
  JobState state = JobState::kRunning;
  uint32_t tasks = 0, committed = 0, running = 0, attempts = 0, copies = 0, failed_attempts = 0;
  std::string reason;
  Time submitted = 0, finished = 0;
  std::string request_key;
  std::string owner;
  // Tasks a policy wanted another attempt of (copy, clone, hedge, restart),
  // refused because they are not idempotent; each task counted once.
  uint32_t copies_refused_side_effects = 0;
  std::vector<JobId> after;        // JobDef::after
  std::vector<JobId> waiting_for;  // parents not finished yet: the job is queued
  int32_t priority = 0;  // JobDef::priority
  // Its copies (speculation, clones, hedges) cancelled so that another
  // job's first attempt could have the slot (docs/POLICIES.md, "Copies
  // only use idle capacity").
  uint32_t copies_preempted = 0;
};

// An upstream task's committed output handed to an attempt (TaskDef::inputs),
// resolved as the attempt launched, and its promoted directory ("" = none).
struct LaunchInput {
  JobId job = 0;
  TaskIndex task = 0;
  std::string output;
  std::string path;  // <output_dir>/task-<task> of the upstream job
};

// What an executor needs to run an attempt (LaunchCmd::spec), copied out of
// the job's definition when the driver takes the command, so that a driver
// sends it without asking the core again.
struct LaunchSpec {
  std::string kernel;
  std::string args;
  bool args_template = false;
  uint32_t cpu_slots = 1, gpus = 0;
  uint64_t memory_mb = 0;
  WorkShare share{};  // TaskDef::share, fixed by the submitter (total 0 = none)
  std::vector<LaunchInput> inputs;
  std::string output_dir;  // the job's (JobDef::output_dir): attempt-scoped output
};

struct LaunchCmd {
  AttemptId attempt = 0;
  ExecutorId executor = 0;
  JobId job = 0;
  TaskIndex task = 0;
  bool copy = false;
  WorkShare share{};        // the task's share of a divisible job (total 0 otherwise)
  bool idempotent = true;   // the task's resolved idempotency (edges pass it on)
  uint32_t task_count = 0;  // tasks in the job (the attempt's identity, docs/KERNELS.md)
  // Set by TakeCommands. Empty when the attempt is not to be sent: its job
  // ended and was evicted in the same turn (its cancel follows), or an
  // input could not be resolved (`error` says why; its time limit ends it).
  std::optional<LaunchSpec> spec;
  std::string error;
};
struct CancelCmd {
  AttemptId attempt = 0;
  ExecutorId executor = 0;
};
struct TaskCommittedCmd {
  JobId job = 0;
  TaskIndex task = 0;
  AttemptId attempt = 0;
  ExecutorId executor = 0;
  double run_s = 0;
  std::string output;
  bool copy = false;  // the committed attempt was a redundant copy (it won the race)
};
// Promote the committed attempt's output directory of a job with
// output_dir (docs/JOBS.md, "Output directories"): the driver journals it,
// has an executor on `host` (the disk that holds the attempt's directory)
// rename it into place, resends it until answered, and reports the answer
// (OutputPromoted, PromotionFailed). Emitted once per commit, and again for
// each promotion a restored job still waits for (executor 0 then).
struct PromoteCmd {
  JobId job = 0;
  TaskIndex task = 0;
  AttemptId attempt = 0;
  ExecutorId executor = 0;  // the attempt's, in this run; 0 when restored
  std::string host;         // ExecutorDesc::host of the executor that ran it
  std::string output_dir;
};
struct JobFinishedCmd {
  JobId job = 0;
  JobState state = JobState::kRunning;
  std::string reason;
  // The final status, taken when the job finished: job_retention may evict
  // the job before the driver reads its commands (many fast jobs finishing
  // in one turn), so JobStatus() can no longer be asked.
  JobStatusInfo status;
};
struct ExecutorChangedCmd {
  enum class Change { kQuarantined, kReleased, kLost };
  ExecutorId executor = 0;
  Change change = Change::kLost;
  std::string reason;
};
using Command = std::variant<LaunchCmd, CancelCmd, TaskCommittedCmd, JobFinishedCmd, ExecutorChangedCmd, PromoteCmd>;

// One owner with running jobs (SchedulerCore::OwnerShares).
struct OwnerShareInfo {
  std::string owner;
  double weight = 1;
  uint32_t max_slots = 0;  // 0 = no quota
  uint64_t slots = 0;      // held by its live attempts now
  uint32_t jobs = 0;       // running
  bool waiting = false;    // has tasks waiting for a slot
};

struct ExecutorStatusInfo {
  ExecutorId id = 0;
  std::string name, host;
  uint32_t slots = 0, gpus = 0, running = 0;
  uint64_t finished = 0;
  bool quarantined = false;
  Time last_seen = 0;
  std::vector<std::pair<std::string, std::string>> labels;
  NodeHealthState health;  // from the node-health detector
};

// Cumulative counts since this core was made (Prometheus counters: a
// restarted scheduler starts again from zero; jobs and commits replayed from
// the journal are not counted again). docs/METRICS.md.
struct CoreCounters {
  uint64_t jobs_succeeded = 0, jobs_failed = 0, jobs_cancelled = 0;  // finished, by final state
  uint64_t tasks_committed = 0;
  // Launches: a task's first attempt, a redundant copy (speculation, clone,
  // hedge), a relaunch of a task whose earlier attempts ended without a
  // result (failure, kill-and-restart, executor lost).
  uint64_t attempts_first = 0, attempts_copy = 0, attempts_restart = 0;
  // Run time of attempts that ended without committing (superseded,
  // failed, cancelled, lost): the machine time mitigation and faults cost.
  double extra_machine_s = 0;
  // Results, adoptions, starts and progress refused because the attempt was
  // never handed to the executor that reported it (never issued, live on
  // another executor, held by another identity, or a kernel it does not offer).
  uint64_t reports_refused = 0;
  // Attempts cancelled at their time limit (explicit or the default one).
  uint64_t attempts_timed_out = 0;
  // Copies cancelled to give their slot to another job's first attempt.
  uint64_t copies_preempted = 0;
  // Rests of executors that handed back attempts unrun, again and again
  // (CoreOptions::rest_after_refusals).
  uint64_t executor_rests = 0;
  // Jobs the placement pump took from the runnable queue: the work placement
  // does. A job that no executor can place now adds none until an executor
  // that could take it joins or frees room (docs/PLACEMENT.md, "Waiting work").
  uint64_t placement_visits = 0;
};

// `copy`: the attempt was a redundant copy (false for commits replayed from the journal).
struct CommittedOutput {
  TaskIndex task;
  AttemptId attempt;
  ExecutorId executor;
  double run_s;
  std::string output;
  bool copy = false;
};
// A committed task whose output directory was not promoted yet (journaled).
struct PendingPromotion {
  TaskIndex task = 0;
  AttemptId attempt = 0;
  std::string host;
};
// An attempt an earlier run handed out, as journaled at its launch: only
// the executor identity it went to may adopt it or bring back its result.
struct JournaledLaunch {
  AttemptId attempt = 0;
  JobId job = 0;
  TaskIndex task = 0;
  std::string identity;  // ExecutorDesc::identity (or its name)
};

// One resolved TaskRef of a task about to run (SchedulerCore::TaskInputs):
// the upstream task's committed output (kept by its job, which the core
// holds while children need it) and its promoted directory, if any.
struct ResolvedInput {
  JobId job = 0;
  TaskIndex task = 0;
  const std::string* output = nullptr;  // valid until the next event
  std::string path;                     // <output_dir>/task-<task>, or ""
};

// Hooks for tracing, predictors and benchmarks (Taskflow's observer idea).
class CoreObserver {
 public:
  virtual ~CoreObserver() = default;
  virtual void OnAttemptEnded(const AttemptRecord&) {}
  virtual void OnJobFinished(const JobStatusInfo&) {}
  // Every commit (the live driver journals them). `output` is null unless
  // the job keeps outputs (return_outputs).
  virtual void OnTaskCommitted(JobId, TaskIndex, AttemptId, ExecutorId, double /*run_s*/,
                               const std::string* /*output*/) {}
  // The first time a task is refused another attempt because it is not
  // idempotent (`what`: "copy", "clone", "restart"; `why` says which rule).
  virtual void OnCopyRefused(JobId, TaskIndex, std::string_view /*what*/, std::string_view /*why*/) {}
  // Every launch, with the identity of the executor it goes to (the live
  // driver journals them: JournaledLaunch), as it is made: `launch.share`
  // and `launch.spec` are set later, when the driver takes the command.
  virtual void OnAttemptLaunched(const LaunchCmd& /*launch*/, const std::string& /*identity*/) {}
  // A divisible job's shares were fixed at its first launches (units per
  // task; attempts from `since` on run them): durable before they go out.
  virtual void OnSharesFixed(JobId, const std::vector<uint64_t>& /*counts*/, AttemptId /*since*/) {}
  // An output promotion is due (every PromoteCmd, restored ones included),
  // and answered (`error` empty: promoted) once per promotion.
  virtual void OnPromotionPending(const PromoteCmd&) {}
  virtual void OnPromotionAnswered(JobId, TaskIndex, AttemptId, const std::string& /*error*/) {}
};

}  // namespace tailcut
