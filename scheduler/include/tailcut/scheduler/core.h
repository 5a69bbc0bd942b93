// The deterministic scheduler core: events in, commands out.
//
// Single-threaded; knows nothing about sockets, threads or wall time (time
// comes from the injected Clock). The live daemon and the simulator drive the
// same core, so a policy behaves identically in both.
//
//   events (methods)                  commands (TakeCommands)
//   SubmitJob / CancelJob             Launch(attempt, executor)
//   AddExecutor / RemoveExecutor      Cancel(attempt, executor)
//   ExecutorSeen (heartbeat)          TaskCommitted(job, task, output)
//   AttemptStarted / Progress         JobFinished(job, state, reason)
//   AttemptSucceeded / Failed         ExecutorChanged(quarantined/released/lost)
//   Tick, and wake-ups (NextWakeUp)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "tailcut/common/attempt_record.h"
#include "tailcut/common/clock.h"
#include "tailcut/common/config.h"
#include "tailcut/common/ids.h"
#include "tailcut/common/status.h"
#include "tailcut/predictors/predictor.h"
#include "tailcut/scheduler/job.h"
#include "tailcut/scheduler/policy.h"

namespace tailcut {

// The most tasks one job can ever have: task counts and indexes are uint32,
// and core.max_tasks_per_job may not be set above this.
inline constexpr uint32_t kTaskCountCeiling = 50'000'000;
// Failed attempts per task are counted in 16 bits: max_attempts (config or
// job) may not exceed this.
inline constexpr uint32_t kMaxAttemptsCeiling = 1000;

// Every option with its default; docs/CONFIG.md and configs/scheduler.toml
// document the same keys under [core].
struct CoreOptions {
  double lost_after_s = 2.0;          // executor silence before it is lost
  uint32_t max_attempts = 3;          // failed attempts per task (default)
  double infeasible_grace_s = 10.0;   // wait for a fitting executor to join
  double redundancy_budget = 0.10;    // live copies <= share of total slots
  uint32_t min_copies = 1;            // ... but always allow this many
  double policy_interval_s = 0.1;     // how often policies run
  // Pipelining for tiny tasks: an executor may hold queued attempts beyond
  // its slots, floor(pipeline_s / typical task run time) per slot, capped.
  double pipeline_s = 0.005;
  uint32_t max_queue_per_slot = 512;
  uint32_t job_retention = 1000;      // finished jobs kept for status queries
  // Quarantined executors are capped at this share of the fleet (at least
  // one when there are three or more), so a noisy detector cannot starve
  // the cluster of capacity.
  double max_quarantined_share = 0.1;
  // Which free executor takes a task (docs/PLACEMENT.md): "expected_finish"
  // (where it is expected to finish first, by the predictors' run time and
  // each executor's speed factor) or "first_free" (the one free longest).
  std::string placement = "expected_finish";
  // With expected_finish, a policy's quarantine applies only to executors
  // at least this many times slower than typical; slower-but-useful ones
  // get only the work they finish first.
  double quarantine_speed_factor = 10.0;
  // Time limits (seconds; 0 = none), for jobs and tasks that set none: an
  // attempt running longer than task_timeout_s is cancelled and counts as a
  // failed attempt; a job running longer than job_timeout_s fails.
  double task_timeout_s = 0;
  double job_timeout_s = 0;
  // A started attempt lost with its executor counts as a failed attempt,
  // except the first such loss of each task (poison tasks that crash their
  // executors fail their job). The simulator's default is false.
  bool count_executor_loss = true;
  // Admission (docs/LIMITS.md). Each task of an unfinished job costs the
  // core ~20 bytes whatever its size on the wire (a 40-byte template can ask
  // for millions), so both are checked before anything is allocated.
  uint32_t max_tasks_per_job = 1'000'000;  // larger jobs: TOO_LARGE
  uint32_t max_queued_tasks = 4'000'000;   // tasks of unfinished jobs in all; over it: BUSY
};
Status LoadCoreOptions(const Config& cfg, std::string_view prefix, CoreOptions* out);

struct ExecutorDesc {
  std::string name;
  std::string host;
  uint32_t slots = 1;
  uint32_t gpus = 0;
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<std::string> kernels;   // exactly the kernels it runs; empty: none
  uint32_t max_queued = 0;            // queued beyond slots it accepts; 0 = no cap
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
};

struct LaunchCmd {
  AttemptId attempt = 0;
  ExecutorId executor = 0;
  JobId job = 0;
  TaskIndex task = 0;
  bool copy = false;
  WorkShare share{};  // the task's share of a divisible job (total 0 otherwise)
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
};

struct CommittedOutput { TaskIndex task; AttemptId attempt; ExecutorId executor; double run_s; std::string output; };
// A committed task whose output directory was not promoted yet (journaled).
struct PendingPromotion {
  TaskIndex task = 0;
  AttemptId attempt = 0;
  std::string host;
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
};

class SchedulerCore {
 public:
  // Every finished attempt updates `predictors` (a default suite when null);
  // policies read it through ClusterView::Predictors().
  SchedulerCore(CoreOptions options, const Clock* clock, PolicyChain policies = {},
                std::unique_ptr<PredictorSuite> predictors = nullptr);
  ~SchedulerCore();
  SchedulerCore(const SchedulerCore&) = delete;
  SchedulerCore& operator=(const SchedulerCore&) = delete;

  // --- events ---
  // Rejects jobs that are empty, ill-formed, over the admission caps
  // (CheckAdmission), or that no registered executor could ever run
  // (unless wait_for_resources or no executor joined yet).
  StatusOr<JobId> SubmitJob(JobDef job);
  // Whether a job of `tasks` tasks may be submitted now, before it is built:
  // TooLarge when it can never fit (over core.max_tasks_per_job or
  // core.max_queued_tasks), ResourceExhausted while unfinished jobs hold
  // too many tasks for it (retry later). The message names the cap.
  Status CheckAdmission(uint64_t tasks) const;
  // The job's final status (it may already be evicted by job_retention
  // when this returns, so JobStatus() might not find it).
  StatusOr<JobStatusInfo> CancelJob(JobId job, std::string reason = "cancelled by client");
  ExecutorId AddExecutor(ExecutorDesc desc);
  // lost = died (heartbeats stopped); else a clean goodbye. Live attempts
  // are requeued either way. With lost = true, a started attempt of a task
  // whose executors were lost under it before counts as a failed attempt
  // (the task may crash its executor); the first such loss is free.
  void RemoveExecutor(ExecutorId e, bool lost, std::string reason);
  void ExecutorSeen(ExecutorId e);
  // Node signals from a heartbeat: GPU clock-throttle reasons (NVML bits,
  // 0 = none) feed the node-health detector (PredictorSuite::NoteGpuThrottle).
  void ExecutorSignals(ExecutorId e, uint32_t gpu_throttle_reasons);
  void AttemptStarted(AttemptId a);
  void AttemptProgress(AttemptId a, float fraction);
  void AttemptSucceeded(AttemptId a, std::string output, double run_s);
  void AttemptFailed(AttemptId a, std::string error, double run_s);
  // The executor dropped the attempt on its own (e.g. it restarted): requeue.
  void AttemptDropped(AttemptId a, std::string why);
  // An executor that re-registered still runs attempt `a` of (job, task):
  // it becomes live on `e` (using its slots; an extra live attempt if the
  // task has others). Fails when the job does not run, the task is
  // committed or dead, or the attempt is live elsewhere: cancel it then.
  Status AdoptAttempt(AttemptId a, JobId job, TaskIndex task, ExecutorId e, bool started);
  // A result for (job, task) from attempt `a` that the core does not know
  // (it finished while its executor was away): commits it if the job runs
  // and the task is not committed yet; live attempts of the task are then
  // cancelled. False when it came too late (nothing changed).
  bool CommitOrphanResult(JobId job, TaskIndex task, AttemptId a, ExecutorId e, std::string output, double run_s);
  // Periodic: executor loss, deadlines, infeasible jobs, policies, placement.
  void Tick();

  // --- recovery: the live driver replays its journal into a fresh core ---
  // Ids below these are never handed out (an earlier run used them).
  void ReserveIds(JobId next_job, AttemptId next_attempt);
  // A job an earlier run accepted and did not finish: its committed tasks
  // are kept (not rerun), the rest run. Not checked for feasibility (it was
  // accepted); no policy's OnJobSubmitted runs again. A divisible job gets
  // back the shares it had (`share_counts`, units per task, run by attempts
  // from `shares_since` on); without them its commits cannot be trusted to
  // fit new shares and it fails.
  // `promotions`: committed tasks whose output directory the earlier run
  // had not promoted; their PromoteCmds go out again and the job succeeds
  // once they are done.
  Status RestoreJob(JobId id, JobDef def, Time submitted, std::vector<CommittedOutput> commits,
                    std::vector<uint64_t> share_counts = {}, AttemptId shares_since = 0,
                    std::vector<PendingPromotion> promotions = {});
  // A job an earlier run finished, for status and result queries; its
  // pending promotions (a job that failed or was cancelled after some
  // commits) go out again too.
  Status RestoreFinishedJob(JobId id, JobDef def, const JobStatusInfo& status, std::vector<CommittedOutput> outputs,
                            std::vector<PendingPromotion> promotions = {});

  // --- output promotion (PromoteCmd) ---
  // The committed attempt's directory of (job, task) is in place: a job
  // whose every task is committed and promoted succeeds. False when no such
  // promotion is pending (a repeated answer: nothing changes).
  bool OutputPromoted(JobId job, TaskIndex task, AttemptId attempt);
  // It cannot be promoted (`error` says why): the job fails, if it runs.
  bool PromotionFailed(JobId job, TaskIndex task, AttemptId attempt, const std::string& error);
  // Every promotion not answered yet, for the driver to resend.
  std::vector<PromoteCmd> PendingPromotions() const;

  // --- commands ---
  // Appends the commands produced since the last call. Policies get their
  // events here (after placement) and the wake-ups they asked for that are
  // due by the clock's Now().
  void TakeCommands(std::vector<Command>* out);
  // When the earliest wake-up a policy asked for is due (Proposal::WakeUp),
  // or -1 when none is pending. Drivers call TakeCommands at that time (the
  // simulator at exactly that virtual time, the live server from its timer):
  // detection then happens at the policy's threshold, not at the next Tick.
  Time NextWakeUp() const;

  // --- queries ---
  StatusOr<JobStatusInfo> JobStatus(JobId job) const;
  StatusOr<std::vector<CommittedOutput>> JobOutputs(JobId job) const;
  std::vector<ExecutorStatusInfo> Executors() const;
  // The task an attempt runs; valid while the job is retained.
  const TaskDef* TaskOf(JobId job, TaskIndex task) const;
  const JobDef* JobDefOf(JobId job) const;  // valid while the job is retained
  // A divisible job's shares for the journal: units per task, and the first
  // attempt id that ran them (this run's, or the restored shares' own).
  // False before they are fixed, and for other jobs.
  bool FixedShares(JobId job, std::vector<uint64_t>* counts, AttemptId* since) const;
  bool HasExecutor(ExecutorId e) const;
  ExecutorId ExecutorOfAttempt(AttemptId a) const;  // 0 if not live
  size_t LiveAttempts() const;
  size_t RunningJobs() const;
  uint64_t QueuedTasks() const;  // tasks of unfinished jobs, committed or not
  // Tasks of running jobs waiting for a slot: never launched, or requeued
  // for a relaunch. O(running jobs).
  uint64_t WaitingTasks() const;
  const CoreCounters& Counters() const;
  std::vector<JobId> RunningJobIds() const;
  const PredictorSuite* Predictors() const;
  // Policies disabled because a hook threw, as "NAME: HOOK threw: WHAT", in
  // chain order (docs/PLUGINS.md, "A policy that throws").
  std::vector<std::string> DisabledPolicies() const;
  void AddObserver(CoreObserver* observer);
  const CoreOptions& options() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tailcut
