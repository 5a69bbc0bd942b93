// Attempt and job lifecycle: launching an attempt, ending it (and recording
// how it ended for predictors and observers), requeueing a task nothing runs
// any more, and finishing a job (with the bounded retention of finished jobs).
#pragma once

#include <string>

#include "core_state.h"
#include "placement.h"

namespace tailcut::core {

// What SchedulerCore::JobStatus reports for `job`.
JobStatusInfo MakeStatusInfo(const Job& job);

class Lifecycle {
 public:
  Lifecycle(CoreState& s, Placement& place) : s_(s), place_(place) {}

  // Registers a job accepted at submit (already validated) and makes it
  // runnable. `id` 0 takes the next id; recovery passes the journaled one.
  Job& AddJob(JobDef def, JobId id = 0);
  // Task t of `job` is committed by attempt `a`: phase, counters, run-time
  // statistics, kept output. `notify` tells observers and streams the
  // result (false when recovery replays a commit). The caller ends the
  // task's other live attempts and finishes the job when it is complete.
  void RecordCommit(Job& job, TaskIndex t, AttemptId a, ExecutorId e, double run_s, std::string output, bool notify,
                    bool copy = false);
  // The output directory of task t (committed by attempt `a`, run on
  // `host`) is to be promoted: PromoteCmd, and the job waits for it.
  void AwaitPromotion(Job& job, TaskIndex t, AttemptId a, ExecutorId e, std::string host);
  // The driver's answer to that PromoteCmd: `error` "" = done, and a job
  // then complete succeeds; else the job fails. False when no such
  // promotion is pending (a repeated or crossed answer: nothing changes).
  bool AnswerPromotion(JobId job, TaskIndex t, AttemptId a, const std::string& error);
  // Registers an executor: it takes work at once, and jobs that waited for
  // a fitting executor may run now.
  ExecutorState& AddExecutor(ExecutorDesc desc);

  // New attempt of (job, t) on `eid`; ids are assigned in launch order.
  // `restart`: the task ran before and was requeued (counted apart).
  void Launch(Job& job, TaskIndex t, ExecutorId eid, bool copy, bool restart = false);
  // Makes attempt `id` of (job, t) live on `e` without telling the executor
  // (Launch, and adopting an attempt an executor already runs).
  Attempt& Link(Job& job, TaskIndex t, ExecutorState& e, AttemptId id, bool copy);
  // The time limit (seconds, 0 = none) of an attempt of (job, t) launched
  // on `e` now: the task's timeout_s, else core.task_timeout_s, else the
  // default relative to the predicted run time (CoreOptions).
  double TimeLimit(const Job& job, TaskIndex t, ExecutorId e) const;
  // How long an attempt launched onto a free slot of `e` may go without
  // its start being reported (0 = no start limit): attempt_timeout_ratio x
  // the class's predicted p99 on `e`, at least attempt_start_floor_s; the
  // run limit's floor while the class is unknown. Silence is judged
  // against the class, not a fixed 30 s (docs/RELIABILITY.md).
  double StartLimit(const Job& job, TaskIndex t, ExecutorId e) const;
  // Arms the run limit once `a` has started (its start limit is over).
  void Started(Attempt& a);
  // Removes a live attempt and records how it ended.
  // `now`: the caller's reading of the clock, if it just took one (a clock
  // read per call less: issue 41); read here when negative.
  void EndAttempt(const Attempt& a, AttemptOutcome outcome, double run_s, Time now = -1);
  // Ends attempt `id` without a result; requeues its task if nothing else runs it.
  void DropAttempt(AttemptId id, AttemptOutcome outcome, double run_s, std::string why);
  // Cancels every live attempt of a task (the executor is told); started
  // ones are evidence for the predictors (ObserveUnfinished).
  void EndLiveAttempts(Job& job, TaskIndex t, AttemptOutcome outcome);
  // A started attempt of `job` ends unfinished now (restarted, beaten by a
  // copy, or its job ended): how long it ran is a lower bound on its run
  // time, evidence of its executor's speed and health
  // (PredictorSuite::ObserveUnfinished). Call before ending it: ending
  // applies health changes.
  void ObserveUnfinished(const Job& job, const Attempt& a);
  // Returns the final status: Retain may evict `job` itself (job_retention
  // = 0), so callers must not touch `job` afterwards.
  JobStatusInfo FinishJob(Job& job, JobState state, std::string reason);
  // Keeps a finished job for status queries; the oldest beyond
  // core.job_retention are dropped.
  void Retain(JobId finished);
  // Moves every live attempt's start and run limit `s` seconds later (a
  // stall of the driver is nobody's lateness).
  void PostponeDeadlines(double s);

 private:
  // Adds a live attempt's deadline to the heap; rebuilds the heap from the
  // live attempts when ended ones' entries outnumber them (a million short
  // attempts per minute under a 30 s floor would otherwise pile up).
  void PushDeadline(const Attempt& a);
  void RebuildDeadlines();

  CoreState& s_;
  Placement& place_;
};

}  // namespace tailcut::core
