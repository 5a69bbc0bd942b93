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
//
// The shared types (options, commands, statuses) are in types.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tailcut/common/clock.h"
#include "tailcut/common/status.h"
#include "tailcut/core/job.h"
#include "tailcut/core/policy.h"
#include "tailcut/core/types.h"
#include "tailcut/predictors/predictor.h"

namespace tailcut {

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
  // are requeued either way. With lost = true (and count_executor_loss),
  // every attempt it was assigned, started or not, counts as a failed
  // attempt (the task may crash its executor).
  void RemoveExecutor(ExecutorId e, bool lost, std::string reason);
  void ExecutorSeen(ExecutorId e);
  // The driver could not listen for `seconds` (its loop stalled: SIGSTOP,
  // swapping, a long burst of work): what executors reported meanwhile is
  // still unread, so no attempt's start or run limit counts that time, nor
  // does the wait for executors to come back after a restart.
  void DiscountStall(double seconds);
  // core.lost_after_s from now on (the live server stretches it with the
  // heartbeat interval of a large fleet).
  void SetLostAfter(double s);
  // Node signals from a heartbeat: GPU clock-throttle reasons (NVML bits,
  // 0 = none) feed the node-health detector (PredictorSuite::NoteGpuThrottle).
  void ExecutorSignals(ExecutorId e, uint32_t gpu_throttle_reasons);
  // Whether a Report from `e` about attempt `a` may be applied: `a` is live
  // on `e`. A report about an attempt never handed to `e` (never issued, or
  // live on another executor) is counted in reports_refused; one about an
  // attempt that already ended (late, cancelled) is only ignored.
  bool AcceptsReport(ExecutorId e, AttemptId a);
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
  // Refused (PermissionDenied, counted) unless `a` was handed to an
  // executor of e's identity (in this run, or in an earlier one as its
  // journaled launch says: RestoreLaunches), and e offers the task's kernel.
  Status AdoptAttempt(AttemptId a, JobId job, TaskIndex task, ExecutorId e, bool started);
  // A result for (job, task) from attempt `a` that the core does not know
  // (it finished while its executor was away): commits it if the job runs
  // and the task is not committed yet; live attempts of the task are then
  // cancelled. False when it came too late (nothing changed), or when `a`
  // was not handed to e's identity (the same rule as AdoptAttempt; counted).
  bool CommitOrphanResult(JobId job, TaskIndex task, AttemptId a, ExecutorId e, std::string output, double run_s);
  // The core's timers that are due by the clock's Now(): executor loss,
  // time limits, quorum deadlines, infeasible jobs' grace, the end of a
  // recovery hold, the policies' OnTick. Nothing else: a tick when nothing
  // is due changes nothing, so the schedule does not depend on how often a
  // driver ticks, provided it ticks at NextWakeUp (docs/PLACEMENT.md).
  void Tick();

  // --- recovery: the live driver replays its journal into a fresh core ---
  // Ids below these are never handed out (an earlier run used them).
  // Attempts in [earlier_from, next_attempt) were an earlier run's: their
  // results and adoptions are taken only as RestoreLaunches says (without
  // it, from any executor offering the kernel); earlier_from = next_attempt:
  // there was no earlier run.
  void ReserveIds(JobId next_job, AttemptId next_attempt, AttemptId earlier_from = 1);
  // After ReserveIds and the jobs: an earlier run's journaled launches.
  // Each attempt may then be adopted (or its result taken) only by an
  // executor of the identity it went to; an earlier run's attempt from
  // `journaled_from` on without a launch here is refused (it was never
  // handed out, or its launch was not durable yet: it reruns). Returns the
  // launches it did not keep (their job is not running, their task is
  // committed or dead, or they are not an earlier run's): the driver drops
  // them from its journal.
  std::vector<AttemptId> RestoreLaunches(std::vector<JournaledLaunch> launches, AttemptId journaled_from);
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
  // When the core's earliest timer is due: a wake-up a policy asked for
  // (Proposal::WakeUp) or any of Tick's; -1 when none is pending (an idle
  // core asks for nothing). Drivers call Tick and TakeCommands at that time
  // (the simulator at exactly that virtual time, the live server from its
  // poll timeout): detection then happens at the policy's threshold, and
  // every timer at its own time, not at the next periodic tick.
  Time NextWakeUp() const;
  // The current gap between two policy runs (CoreOptions::policy_interval_*):
  // a driver that ticks on its own schedule (the simulator) ticks this often.
  double PolicyInterval() const;

  // --- queries ---
  StatusOr<JobStatusInfo> JobStatus(JobId job) const;
  StatusOr<std::vector<CommittedOutput>> JobOutputs(JobId job) const;
  std::vector<ExecutorStatusInfo> Executors() const;
  // At most `limit` executors with an id above `after`, by id: one page in
  // O(log fleet + limit) (ListExecutors).
  std::vector<ExecutorStatusInfo> Executors(ExecutorId after, size_t limit) const;
  size_t ExecutorCount() const;
  // The upstream outputs task `task` of `job` takes as input
  // (TaskDef::inputs), resolved in order; the pointers are valid until the
  // next event. An error when one cannot be resolved (its parent was lost).
  Status TaskInputs(JobId job, TaskIndex task, std::vector<ResolvedInput>* out);
  // Jobs that unfinished jobs run after (JobDef::after): the journal must
  // keep them past its retention, for recovery to link the children again.
  std::vector<JobId> ParentsOfUnfinished() const;
  // The task an attempt runs; valid while the job is retained.
  const TaskDef* TaskOf(JobId job, TaskIndex task) const;
  const JobDef* JobDefOf(JobId job) const;  // valid while the job is retained
  // A divisible job's shares for the journal: units per task, and the first
  // attempt id that ran them (this run's, or the restored shares' own).
  // False before they are fixed, and for other jobs.
  bool FixedShares(JobId job, std::vector<uint64_t>* counts, AttemptId* since) const;
  bool HasExecutor(ExecutorId e) const;
  ExecutorId ExecutorOfAttempt(AttemptId a) const;  // 0 if not live
  // Attempts launched on `e` or adopted by it since it registered: what a
  // Report of its may speak of (the server's cap on a Report's entries).
  uint64_t AttemptsHandedTo(ExecutorId e) const;
  size_t LiveAttempts() const;
  size_t RunningJobs() const;
  uint64_t QueuedTasks() const;  // tasks of unfinished jobs, committed or not
  // Tasks of running jobs waiting for a slot: never launched, or requeued
  // for a relaunch (not those of jobs queued behind their parents).
  // O(running jobs).
  uint64_t WaitingTasks() const;
  const CoreCounters& Counters() const;
  // Owners with running jobs (or slots held), by name: their weights,
  // quotas and the slots they hold (docs/POLICIES.md, "Owners"). O(owners).
  std::vector<OwnerShareInfo> OwnerShares() const;
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
