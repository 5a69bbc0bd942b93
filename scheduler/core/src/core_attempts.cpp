// SchedulerCore::Impl's attempt reports (started, progress, result, failure,
// drop, adoption after a restart), who may report what, and the attempt
// time limits. The class is in core_impl.h.
#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <unordered_map>

#include "core_impl.h"
#include "tailcut/common/log.h"

namespace tailcut {

bool SchedulerCore::Impl::AcceptsReport(ExecutorId e, AttemptId id) {
  auto it = s_.attempts.find(id);
  if (it != s_.attempts.end() && it->second.executor == e) return true;
  // Ended attempts (late results, cancelled copies) are only ignored; an
  // attempt live elsewhere or never issued was never this executor's.
  if (it != s_.attempts.end() || id == 0 || id >= s_.next_attempt_id) Refuse(e, id, "never handed to it");
  return false;
}

void SchedulerCore::Impl::AttemptStarted(AttemptId id) {
  auto it = s_.attempts.find(id);
  if (it != s_.attempts.end() && it->second.started < 0) MarkStarted(it->second);
}

void SchedulerCore::Impl::AttemptProgress(AttemptId id, float fraction) {
  auto it = s_.attempts.find(id);
  // std::clamp passes NaN through; policies compare progress rates.
  if (it == s_.attempts.end() || std::isnan(fraction)) return;
  it->second.progress = std::clamp(fraction, 0.0f, 1.0f);
  s_.PostAttempt(PolicyEvent::Kind::kProgress, it->second);
}

void SchedulerCore::Impl::AttemptSucceeded(AttemptId id, std::string output, double run_s) {
  auto it = s_.attempts.find(id);
  if (it == s_.attempts.end()) return;  // late result of an attempt already ended
  Attempt a = it->second;
  Answered(a.executor);
  Job& job = s_.jobs.at(a.job);
  Task& task = job.tasks[a.task];
  if (job.state != JobState::kRunning || task.phase == TaskPhase::kCommitted) {
    life_.EndAttempt(a, AttemptOutcome::kSuperseded, run_s);
    return;
  }
  const Time now = s_.Now();
  NoteReportLag(a, run_s, now);
  life_.EndAttempt(a, AttemptOutcome::kCommitted, run_s, now);
  Commit(job, a.task, a.id, a.executor, std::move(output), run_s, a.copy);
}

// One sample of CoreState::report_lag: the age the core saw minus the
// run time the executor measured (only when it measured one). An attempt
// whose start the core heard with its result (one Report, one clock
// reading: how pipelined tiny tasks come back) was never seen running, so
// it says nothing about how late results arrive; counted as a lag of 0 it
// held the estimate near 0 while the results of the others came a loop
// turn or two late, and `predictive` restarted those (issue 41: no-ops
// restarted on a healthy fleet; tests/policies/noise_test.cpp).
void SchedulerCore::Impl::NoteReportLag(const Attempt& a, double run_s, Time now) {
  if (a.started < 0 || !(run_s > 0) || now <= a.started) return;
  double lag = std::max(0.0, now - a.started - run_s);
  constexpr double kAlpha = 0.05;
  // The jitter: an EWMA of the distance between successive samples (0 for
  // a steady lag, so a constant network delay is taken off as before).
  if (s_.report_lag_last >= 0)
    s_.report_lag_jitter += kAlpha * (std::abs(lag - s_.report_lag_last) - s_.report_lag_jitter);
  s_.report_lag_last = lag;
  s_.report_lag += kAlpha * (lag - s_.report_lag);
}

bool SchedulerCore::Impl::CommitOrphanResult(JobId j, TaskIndex t, AttemptId a, ExecutorId e, std::string output,
                                             double run_s) {
  if (auto it = s_.attempts.find(a); it != s_.attempts.end()) {  // not an orphan after all
    if (it->second.executor != e || it->second.job != j || it->second.task != t) {
      Refuse(e, a, "live on another executor");
      return false;
    }
    AttemptSucceeded(a, std::move(output), run_s);
    return true;
  }
  if (!HeldBy(a, j, t, e).ok()) return false;
  Job* job = s_.FindJob(j);
  if (!job || job->state != JobState::kRunning || t >= job->Count() || UnknownShare(*job, a)) return false;
  TaskPhase phase = job->tasks[t].phase;
  if (phase == TaskPhase::kCommitted || phase == TaskPhase::kDead) return false;
  s_.held.erase(a);  // commits once
  if (a < s_.run_attempt_base) job->attempts++;  // an earlier run's attempt: this run counts it now
  Commit(*job, t, a, e, std::move(output), run_s);
  return true;
}

Status SchedulerCore::Impl::AdoptAttempt(AttemptId id, JobId j, TaskIndex t, ExecutorId eid, bool started) {
  ExecutorState* e = s_.FindExec(eid);
  if (!e) return Status::NotFound("no executor " + std::to_string(eid));
  if (auto it = s_.attempts.find(id); it != s_.attempts.end()) {
    if (it->second.executor == eid && it->second.job == j && it->second.task == t) return Status::Ok();
    Refuse(eid, id, "live on another executor");
    return Status::FailedPrecondition("attempt " + std::to_string(id) + " is live elsewhere");
  }
  if (Status s = HeldBy(id, j, t, eid); !s.ok()) return s;
  Job* job = s_.FindJob(j);
  if (!job || job->state != JobState::kRunning)
    return Status::FailedPrecondition("job " + std::to_string(j) + " does not run");
  if (t >= job->Count()) return Status::InvalidArgument("no task " + std::to_string(t));
  if (UnknownShare(*job, id))
    return Status::FailedPrecondition("attempt " + std::to_string(id) + " runs a share of divisible job " +
                                      std::to_string(j) + " from before the restart; the task runs again");
  TaskPhase phase = job->tasks[t].phase;
  if (phase == TaskPhase::kCommitted || phase == TaskPhase::kDead)
    return Status::FailedPrecondition("task " + std::to_string(t) + " is done");
  // Never two live attempts of a task that must not run twice: the one
  // launched after its executor went away stays, this one is cancelled.
  if (job->tasks[t].live > 0 && !s_.Idempotent(*job, t))
    return Status::FailedPrecondition("task " + std::to_string(t) + " is not idempotent and runs elsewhere");
  // Any entry of the task in the retry queue (or next_unlaunched) goes stale:
  // Pump skips tasks that are not waiting.
  Attempt& a = life_.Link(*job, t, *e, id, false);
  if (id < s_.run_attempt_base) job->attempts++;  // launched (and counted) by an earlier run
  s_.held.erase(id);
  s_.next_attempt_id = std::max(s_.next_attempt_id, id + 1);  // ids never repeat
  if (started) MarkStarted(a);
  s_.dirty = true;
  return Status::Ok();
}

std::vector<AttemptId> SchedulerCore::Impl::RestoreLaunches(std::vector<JournaledLaunch> launches,
                                                            AttemptId journaled_from) {
  s_.launches_journaled_from = std::max(journaled_from, s_.earlier_runs_from);
  std::vector<AttemptId> dropped;
  std::unordered_map<std::string, std::shared_ptr<const std::string>> identities;  // one string per executor
  for (JournaledLaunch& l : launches) {
    const Job* job = s_.FindJob(l.job);
    bool earlier = l.attempt >= s_.earlier_runs_from && l.attempt < s_.run_attempt_base;
    if (!earlier || !job || job->state != JobState::kRunning || l.task >= job->Count() ||
        job->tasks[l.task].phase == TaskPhase::kCommitted || job->tasks[l.task].phase == TaskPhase::kDead) {
      dropped.push_back(l.attempt);
      continue;
    }
    auto& id = identities[l.identity];
    if (!id) id = std::make_shared<const std::string>(std::move(l.identity));
    Hold(id, l.attempt, l.job, l.task);
  }
  return dropped;
}

void SchedulerCore::Impl::AttemptFailed(AttemptId id, std::string error, double run_s) {
  auto it = s_.attempts.find(id);
  if (it == s_.attempts.end()) return;
  Answered(it->second.executor);
  FailAttempt(it->second, std::move(error), run_s);
}

void SchedulerCore::Impl::AttemptDropped(AttemptId id, std::string why) {
  auto it = s_.attempts.find(id);
  if (it == s_.attempts.end()) return;
  const ExecutorId e = it->second.executor;
  life_.DropAttempt(id, AttemptOutcome::kExecutorLost, 0, std::move(why));
  NoteRefusal(e);
}

void SchedulerCore::Impl::MarkStarted(Attempt& a) {
  a.started = s_.Now();
  life_.Started(a);
  s_.PostAttempt(PolicyEvent::Kind::kStarted, a);
  if (!s_.policies.empty()) a.start_event = static_cast<uint32_t>(s_.policy_events.size());
}

// --- who may report what (docs/SECURITY.md, "Results only for work handed out") ---
void SchedulerCore::Impl::Refuse(ExecutorId e, AttemptId a, const char* why) {
  s_.counters.reports_refused++;
  TC_LOG(Debug) << "executor " << e << ": report about attempt " << a << " refused: " << why;
}

// Attempt `a` of (j, t) was handed to an executor of e's identity that
// left since, or in an earlier run (its journaled launch, restored into
// `held`; to anyone when that run did not journal launches); and e offers
// its kernel.
Status SchedulerCore::Impl::HeldBy(AttemptId a, JobId j, TaskIndex t, ExecutorId eid) {
  const ExecutorState* e = s_.FindExec(eid);
  auto refuse = [&](const char* why) {
    Refuse(eid, a, why);
    return Status::PermissionDenied("attempt " + std::to_string(a) + " of job " + std::to_string(j) + " task " +
                                    std::to_string(t) + ": " + why);
  };
  if (!e) return refuse("no such executor");
  if (auto h = s_.held.find(a); h != s_.held.end()) {
    if (*h->second.identity != *e->identity || h->second.job != j || h->second.task != t)
      return refuse("held by another executor, or for another task");
  } else if (a < s_.earlier_runs_from || a >= s_.run_attempt_base) {
    return refuse("never handed to it");
  } else if (a >= s_.launches_journaled_from) {
    return refuse("the journal has no launch of it (never handed out, or handed to another identity)");
  }
  if (const TaskDef* d = TaskOf(j, t); d && !e->kernels.count(d->kernel)) return refuse("kernel not offered by it");
  return Status::Ok();
}

// Remembers that `a` was live on an executor of `identity` when it left
// (HeldAttempt), or when an earlier run ended (RestoreLaunches).
void SchedulerCore::Impl::Hold(std::shared_ptr<const std::string> identity, AttemptId a, JobId j, TaskIndex t) {
  if (!s_.held.emplace(a, HeldAttempt{std::move(identity), j, t}).second) return;
  s_.held_order.push_back(a);
  while (s_.held_order.size() > CoreState::kMaxHeldAttempts) {
    s_.held.erase(s_.held_order.front());
    s_.held_order.pop_front();
  }
}

// The executor answered about an attempt: it is not unresponsive.
void SchedulerCore::Impl::Answered(ExecutorId id) {
  if (ExecutorState* e = s_.FindExec(id)) e->timeouts_in_a_row = e->refusals_in_a_row = e->rests_in_a_row = 0;
}

// An executor that hands back attempts unrun, again and again, rests
// (CoreOptions::rest_after_refusals); a refusal after a rest, with no
// result between, rests it again for twice as long. What it hands back
// while it rests (sent before it was told) does not count.
void SchedulerCore::Impl::NoteRefusal(ExecutorId id) {
  ExecutorState* e = s_.FindExec(id);
  const uint32_t after = s_.opt.rest_after_refusals;
  if (!e || after == 0 || e->resting_until >= 0 || e->unresponsive || ++e->refusals_in_a_row < after) return;
  if (e->quarantined) return;  // a policy's quarantine: no capacity to take out
  const uint32_t doublings = std::min<uint32_t>(e->rests_in_a_row++, 20);
  const double rest = std::min(s_.opt.rest_s * static_cast<double>(1u << doublings), s_.opt.max_rest_s);
  s_.counters.executor_rests++;
  e->resting_until = s_.Now() + rest;
  s_.rests.push({e->resting_until, id});
  std::string reason = "handed back its last " + std::to_string(e->refusals_in_a_row) + " attempts unrun; rests " +
                       FormatLimit(rest) + " s";
  TC_LOG(Info) << "executor " << id << " (" << e->desc.name << ") " << reason;
  gate_.Quarantine(*e, reason);  // outside the policies' cap: it gives no capacity anyway
}

// Rests that are over: the executors take work again.
bool SchedulerCore::Impl::EndRests(Time now) {
  bool fired = false;
  while (!s_.rests.empty() && s_.rests.top().first <= now) {
    auto [at, id] = s_.rests.top();
    s_.rests.pop();
    ExecutorState* e = s_.FindExec(id);
    if (!e || e->resting_until != at) continue;  // gone (registering again starts afresh)
    e->resting_until = -1;
    fired = true;
    if (!e->unresponsive) gate_.Release(*e, "rested");
  }
  return fired;
}

// An executor whose last attempts all timed out takes no more work until
// it registers again (a quarantine outside the policies' cap: it gives no
// capacity anyway).
void SchedulerCore::Impl::NoteTimeout(ExecutorId id) {
  ExecutorState* e = s_.FindExec(id);
  if (!e || e->unresponsive || ++e->timeouts_in_a_row < s_.opt.unresponsive_after_timeouts ||
      s_.opt.unresponsive_after_timeouts == 0)
    return;
  e->unresponsive = true;
  std::string reason = "its last " + std::to_string(e->timeouts_in_a_row) + " attempts timed out";
  TC_LOG(Warn) << "executor " << id << " (" << e->desc.name << ") unresponsive: " << reason;
  gate_.Quarantine(*e, reason);  // outside the policies' cap: it gives no capacity anyway
}

// Attempts and jobs past their time limit: O(log n) per deadline.
bool SchedulerCore::Impl::ExpireDeadlines(Time now) {
  bool fired = false;
  while (!s_.attempt_deadlines.empty() && s_.attempt_deadlines.top().first <= now) {
    auto [at, id] = s_.attempt_deadlines.top();
    s_.attempt_deadlines.pop();
    auto it = s_.attempts.find(id);
    if (it == s_.attempts.end()) continue;          // ended in time
    if (it->second.deadline != at) continue;        // re-armed when it started
    Attempt a = it->second;
    fired = true;
    s_.counters.attempts_timed_out++;
    s_.Emit(CancelCmd{id, a.executor});
    std::string why = a.deadline < a.run_deadline
                          ? "attempt was not reported started within its start limit of " +
                                FormatLimit(a.deadline - a.queued) + " s since launch"
                          : "attempt exceeded its time limit of " + FormatLimit(a.deadline - a.queued) + " s since launch";
    FailAttempt(a, std::move(why), now - (a.started >= 0 ? a.started : a.queued));
    NoteTimeout(a.executor);
  }
  while (!s_.job_deadlines.empty() && s_.job_deadlines.top().first <= now) {
    JobId id = s_.job_deadlines.top().second;
    s_.job_deadlines.pop();
    Job* job = s_.FindJob(id);
    if (!job || job->state != JobState::kRunning) continue;
    double limit = job->def.timeout_s > 0 ? job->def.timeout_s : s_.opt.job_timeout_s;
    life_.FinishJob(*job, JobState::kFailed,
                    "job exceeded timeout_s = " + FormatLimit(limit) + " with " + std::to_string(job->committed) +
                        " of " + std::to_string(job->Count()) + " tasks committed");
    fired = true;
  }
  return fired;
}

std::string SchedulerCore::Impl::FormatLimit(double s) {
  std::ostringstream o;
  o << s;
  return o.str();
}

// An attempt lost with its executor, started or only assigned (its
// `started` may never have reached us: a task that crashes its executor at
// once): a failed attempt, so a poison task fails its job after
// max_attempts executors, not the fleet.
void SchedulerCore::Impl::CountLoss(Attempt a) {
  FailAttempt(a, "its executor was lost while it held the attempt (the task may crash its executor)",
              s_.Now() - (a.started >= 0 ? a.started : a.queued), AttemptOutcome::kExecutorLost);
}

// Ends live attempt `a` as failed (recorded with `outcome`: an executor
// loss stays one in the trace); requeues its task or, at max_attempts,
// marks it dead (which may end the job).
void SchedulerCore::Impl::FailAttempt(Attempt a, std::string error, double run_s,  // a copy: EndAttempt erases it
                                      AttemptOutcome outcome) {
  life_.EndAttempt(a, outcome, run_s);
  Job& job = s_.jobs.at(a.job);
  job.failed_attempts++;
  job.last_error = error;
  Task& task = job.tasks[a.task];
  task.failures++;
  if (job.state != JobState::kRunning || task.phase == TaskPhase::kCommitted || task.live > 0) return;
  if (task.failures >= job.def.max_attempts) {
    task.phase = TaskPhase::kDead;
    job.dead++;
    if (!CanStillComplete(job)) {
      life_.FinishJob(job, JobState::kFailed,
                      "task " + std::to_string(a.task) + " failed " + std::to_string(task.failures) +
                          " times; last error: " + error);
    } else if (job.committed + job.dead == job.Count()) {  // a quorum with nothing left to wait for
      life_.FinishJob(job, JobState::kSucceeded,
                      "quorum closed: " + std::to_string(job.committed) + " of " + std::to_string(job.Count()) +
                          " reported, the rest failed");
    }
  } else {
    place_.Requeue(job, a.task);
  }
  s_.dirty = true;
}

// Commits task t of a running job with this result (the attempt already
// ended, or was never known); cancels the task's other live attempts.
void SchedulerCore::Impl::Commit(Job& job, TaskIndex t, AttemptId attempt, ExecutorId eid, std::string output,
                                 double run_s, bool copy) {
  if (ExecutorState* e = s_.FindExec(eid)) e->finished++;
  life_.RecordCommit(job, t, attempt, eid, run_s, std::move(output), /*notify=*/true, copy);
  life_.EndLiveAttempts(job, t, AttemptOutcome::kSuperseded);
  if (job.Complete()) life_.FinishJob(job, JobState::kSucceeded, "");
  s_.dirty = true;
}

}  // namespace tailcut
