// SchedulerCore: the facade over the core's pieces and its event handlers.
// State lives in core_state.h; feasibility.h, placement.h, lifecycle.h,
// proposal_gate.h, cluster_view.h, restore.h (recovery) and queries.h each
// do one job on it. The Impl class is in core_impl.h; its attempt reports in
// core_attempts.cpp, its delivery of policy events in core_policy_events.cpp.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "core_impl.h"
#include "tailcut/common/log.h"
#include "tailcut/core/scheduler_core.h"

namespace tailcut {

StatusOr<JobId> SchedulerCore::Impl::SubmitJob(JobDef def) {
  Status s = CheckAdmission(uint64_t{def.tasks.size()} + def.template_count);
  if (s.ok()) s = CheckPriority(def.priority);
  if (s.ok()) SortLabels(def);
  if (s.ok()) s = ValidateJob(s_.executors, def);
  if (s.ok()) s = ValidateDivisible(def);
  if (s.ok()) s = CheckParents(s_, def);
  if (!s.ok()) return s;
  JobId id = life_.AddJob(std::move(def)).id;
  s_.shares.Add(id, s_.jobs.at(id).def);
  std::vector<Proposal> proposals;
  for (uint32_t i = 0; i < s_.policies.size(); ++i) {
    GuardedPolicy& p = s_.policies[i];
    proposals.clear();
    if (CallPolicy(p, "OnJobSubmitted", [&](MitigationPolicy& m) { m.OnJobSubmitted(view_, id, &proposals); }))
      gate_.ApplyAll(proposals, p.name, i);
  }
  s_.dirty = true;
  return id;
}

std::vector<PromoteCmd> SchedulerCore::Impl::PendingPromotions() const {
  std::vector<PromoteCmd> out;
  out.reserve(s_.promotions.size());
  for (const auto& [key, cmd] : s_.promotions) out.push_back(cmd);
  return out;
}

StatusOr<JobStatusInfo> SchedulerCore::Impl::CancelJob(JobId id, std::string reason) {
  Job* job = s_.FindJob(id);
  if (!job) return Status::NotFound("no job " + std::to_string(id));
  if (job->state != JobState::kRunning)
    return Status::FailedPrecondition("job " + std::to_string(id) + " already " + JobStateName(job->state));
  return life_.FinishJob(*job, JobState::kCancelled, std::move(reason));
}

ExecutorId SchedulerCore::Impl::AddExecutor(ExecutorDesc desc) {
  ExecutorId id = life_.AddExecutor(std::move(desc)).id;
  s_.dirty = true;
  return id;
}

void SchedulerCore::Impl::RemoveExecutor(ExecutorId id, bool lost, std::string reason) {
  auto it = s_.executors.find(id);
  if (it == s_.executors.end()) return;
  const std::vector<AttemptId> ids = it->second.attempts.Sorted();  // deterministic requeue order
  for (AttemptId a : ids) {
    auto at = s_.attempts.find(a);
    if (at == s_.attempts.end()) continue;  // ended by a job that failed just now
    Hold(it->second, at->second);
    if (lost && s_.opt.count_executor_loss) {
      CountLoss(at->second);
      continue;
    }
    life_.DropAttempt(a, AttemptOutcome::kExecutorLost, 0, "");
  }
  s_.quarantined -= it->second.quarantined;
  s_.total_slots -= it->second.desc.slots;
  s_.free_slots -= CoreState::FreeSlotsOf(it->second);
  s_.queue_room.Remove(id);
  s_.kernel_names.Withdraw(it->second.kernel_bits);
  s_.executors_epoch++;
  place_.ForgetExecutor(id);
  place_.WakeFeasibleOn(it->second);  // what it could run may fit nowhere now
  s_.predictors->ForgetExecutor(id);
  if (lost) {
    TC_LOG(Warn) << "executor " << id << " (" << it->second.desc.name << ") lost: " << reason << "; " << ids.size()
                 << " attempts rescheduled";
    s_.Emit(ExecutorChangedCmd{id, ExecutorChangedCmd::Change::kLost, reason});
  }
  s_.exec_index.Erase(id);
  s_.executors.erase(it);
  s_.PostExecutor(id, lost ? ExecutorChange::kLost : ExecutorChange::kLeft);
  s_.dirty = true;
}

void SchedulerCore::Impl::ExecutorSignals(ExecutorId id, uint32_t gpu_throttle_reasons) {
  if (!s_.FindExec(id)) return;
  s_.predictors->NoteGpuThrottle(id, gpu_throttle_reasons, s_.Now());
  for (auto& [e, state] : s_.predictors->HealthTransitions())
    TC_LOG(Info) << "executor " << e << " health: " << NodeHealthName(state.state) << " (speed factor "
                 << state.speed_factor << ")";
}

// The core's timers, each due at a time it computed (NextWakeUp): executor
// loss, time limits, jobs' own timers, the end of a recovery hold, the
// policies' OnTick. Tick runs what is due and nothing else; drivers tick at
// NextWakeUp, so the schedule follows from events and these times, never
// from how often a driver ticks (docs/PLACEMENT.md, "Events, not ticks").
void SchedulerCore::Impl::RunDue() {
  const Time now = s_.Now();
  bool fired = false;
  if (s_.opt.lost_after_s > 0) {
    // Only the entries older than the timeout. An executor's newest
    // entry is at most a quarter timeout older than when it was last
    // heard (Heard), so one heard since stays at the front until it is
    // due or heard again (then a newer entry makes this one stale): the
    // entries behind it wait at most that quarter. Compared as sums, the
    // way NextWakeUp computes the time they fall due.
    const double lost_after = s_.opt.lost_after_s;
    std::vector<ExecutorId> lost;
    while (!s_.heard.empty() && now > s_.heard.front().first + lost_after) {
      auto [t, id] = s_.heard.front();
      ExecutorState* e = s_.FindExec(id);
      if (e && e->heard_queued == t && now <= e->last_seen + lost_after) break;  // not due yet
      s_.heard.pop_front();
      if (e && e->heard_queued == t) lost.push_back(id);  // else gone, or queued again since
    }
    std::sort(lost.begin(), lost.end());  // deterministic order
    for (ExecutorId id : lost) RemoveExecutor(id, true, "no heartbeat for " + std::to_string(lost_after) + " s");
    fired |= !lost.empty();
  }
  fired |= ExpireDeadlines(now);
  fired |= EndRests(now);
  fired |= RunJobTimers(now);
  if (s_.recovery_hold_until >= 0 && now >= s_.recovery_hold_until) {
    s_.recovery_hold_until = -1;  // the pump releases the held tasks
    fired = true;
  }
  if (PolicyTimerArmed() && now >= s_.next_policy_time) {
    s_.next_policy_time = now + PolicyInterval();
    RunOnTick();
    fired = true;
  }
  if (fired) s_.dirty = true;
}

void SchedulerCore::Impl::RunOnTick() {
  std::vector<Proposal> proposals;
  for (uint32_t i = 0; i < s_.policies.size(); ++i) {
    GuardedPolicy& p = s_.policies[i];
    proposals.clear();
    if (CallPolicy(p, "OnTick", [&](MitigationPolicy& m) { m.OnTick(view_, &proposals); }))
      gate_.ApplyAll(proposals, p.name, i);
  }
  // Advice that changes with time alone is caught here: a share of the
  // fleet per policy interval, all of it once a second, not per placement.
  place_.RefreshAvoidSweep(PolicyInterval());
}

// While nothing runs the policy timer is not armed (no wake-ups for an idle
// scheduler), so before placing the work an event brought, the policies'
// advice (AvoidExecutor, which may change with time alone) is asked again
// if an interval has passed since: at most once per interval, and OnTick
// keeps its own turn.
void SchedulerCore::Impl::RefreshIdlePolicies() {
  const Time now = s_.Now();
  if (s_.policies.empty() || !s_.dirty || PolicyTimerArmed() || now < s_.next_idle_refresh) return;
  s_.next_idle_refresh = now + PolicyInterval();
  place_.RefreshAvoidSweep(PolicyInterval());
}

// Quorum deadlines and infeasible jobs' grace, checked when due: O(log n)
// per timer, nothing per tick for the jobs that wait.
bool SchedulerCore::Impl::RunJobTimers(Time now) {
  bool fired = false;
  while (!s_.job_timers.empty() && s_.job_timers.top().first <= now) {
    Job* job = s_.FindJob(s_.job_timers.top().second);
    s_.job_timers.pop();
    // Queued behind its parents: no clock of its own yet (Unblock arms it).
    if (!job || job->state != JobState::kRunning || !job->waiting_for.empty()) continue;
    const CompletionRule& r = job->def.rule;
    if (r.kind == CompletionKind::kQuorum && r.deadline_s > 0 && now >= job->submitted + r.deadline_s) {
      std::string summary = std::to_string(job->committed) + " of " + std::to_string(job->Count()) + " reported";
      if (job->committed >= std::max<uint32_t>(r.min_count, 1))
        life_.FinishJob(*job, JobState::kSucceeded, "quorum closed at deadline: " + summary);
      else
        life_.FinishJob(*job, JobState::kFailed,
                        "deadline passed with " + summary + ", fewer than min_count " + std::to_string(r.min_count));
      fired = true;
      continue;
    }
    if (!job->def.wait_for_resources && job->infeasible_since >= 0 &&
        now - job->infeasible_since >= s_.opt.infeasible_grace_s) {
      life_.FinishJob(*job, JobState::kFailed, job->infeasible_why);
      fired = true;
    }
  }
  return fired;
}

// Timers of attempts and jobs that ended stay in their heaps until they come
// up; those at the front go now, so NextWakeUp names a time something is due
// (an idle core asks to be woken for nothing). Amortised O(log n) per timer.
void SchedulerCore::Impl::DropStaleTimers() {
  auto job_ended = [&](JobId id) {
    const Job* j = s_.FindJob(id);
    return !j || j->state != JobState::kRunning;
  };
  // Ended, or re-armed when it started (its start limit's entry is stale).
  auto stale = [&](const CoreState::Deadline& d) {
    auto it = s_.attempts.find(d.second);
    return it == s_.attempts.end() || it->second.deadline != d.first;
  };
  while (!s_.attempt_deadlines.empty() && stale(s_.attempt_deadlines.top())) s_.attempt_deadlines.pop();
  while (!s_.job_deadlines.empty() && job_ended(s_.job_deadlines.top().second)) s_.job_deadlines.pop();
  while (!s_.job_timers.empty() && job_ended(s_.job_timers.top().second)) s_.job_timers.pop();
}

bool SchedulerCore::Impl::PolicyTimerArmed() const {
  // Nothing to mitigate while no attempt runs, except a quarantine a
  // policy releases on time (reassign's probation): an idle scheduler,
  // or one whose waiting work fits nowhere, is not woken for OnTick.
  return !s_.policies.empty() && (!s_.attempts.empty() || s_.quarantined > 0);
}

Time SchedulerCore::Impl::NextWakeUp() const {
  Time next = -1;
  auto consider = [&](Time t) {
    if (next < 0 || t < next) next = t;
  };
  if (!s_.wakeups.empty()) consider(s_.wakeups.top().at);
  if (PolicyTimerArmed()) consider(s_.next_policy_time);
  if (!s_.attempt_deadlines.empty()) consider(s_.attempt_deadlines.top().first);
  if (!s_.job_deadlines.empty()) consider(s_.job_deadlines.top().first);
  if (!s_.job_timers.empty()) consider(s_.job_timers.top().first);
  if (!s_.rests.empty()) consider(s_.rests.top().first);
  if (s_.recovery_hold_until >= 0) consider(s_.recovery_hold_until);
  if (s_.opt.lost_after_s > 0 && !s_.heard.empty()) {
    auto [t, id] = s_.heard.front();
    auto it = s_.executors.find(id);
    Time base = it != s_.executors.end() && it->second.heard_queued == t ? std::max(t, it->second.last_seen) : t;
    // Lost strictly after lost_after_s of silence (RunDue).
    consider(std::nextafter(base + s_.opt.lost_after_s, std::numeric_limits<double>::infinity()));
  }
  return next;
}

void SchedulerCore::Impl::TakeCommands(std::vector<Command>* out) {
  // Placement first, so policies see the cluster as it is; what they
  // propose may end or launch attempts (more events) and free slots
  // (placement again). A policy that keeps reacting to its own effects
  // is cut off after kMaxRounds; the rest waits for the next call.
  constexpr int kMaxRounds = 64;
  RefreshIdlePolicies();
  for (int round = 0; round < kMaxRounds; ++round) {
    if (Settle(s_, life_, place_)) s_.dirty = true;  // children of jobs that just ended
    if (s_.dirty) Pump();
    s_.dirty = false;
    if (!DeliverPolicyEvents()) break;
  }
  DropStaleTimers();
  CompleteLaunches(s_);  // shares fixed, each launch given its spec
  if (out->empty()) {
    out->swap(s_.commands);
  } else {
    std::move(s_.commands.begin(), s_.commands.end(), std::back_inserter(*out));
    s_.commands.clear();
  }
}

double SchedulerCore::Impl::PolicyInterval() const {
  const CoreOptions& o = s_.opt;
  // Without policies nothing runs at the interval: drivers keep ticking at
  // policy_interval_s (a `none` run does not depend on the task scale).
  if (s_.policies.empty() || o.policy_interval_ratio <= 0 || s_.typical_run_s <= 0) return o.policy_interval_s;
  return std::clamp(o.policy_interval_ratio * s_.typical_run_s, o.policy_interval_min_s, o.policy_interval_max_s);
}

bool SchedulerCore::Impl::CanStillComplete(const Job& job) {
  switch (job.def.rule.kind) {
    case CompletionKind::kAll: return job.dead == 0;
    case CompletionKind::kKOfN: return job.Count() - job.dead >= job.def.rule.k;
    case CompletionKind::kQuorum: return job.Count() - job.dead >= std::max<uint32_t>(job.def.rule.min_count, 1);
  }
  return false;
}

// Places queued tasks on executors: owners by weighted fair share (the
// lowest slots / weight first), an owner's jobs by priority, jobs of one
// priority round-robin, 64 tasks per job per turn (docs/POLICIES.md, "Owners").
void SchedulerCore::Impl::Pump() {
  constexpr uint32_t kQuantum = 64;  // tasks per job per turn: small jobs are not starved
  // Some job in runnable may queue beyond slots. Performance: this was a
  // scan of runnable on every Pump, i.e. O(runnable jobs) after every
  // event; with a backlog (10,000 executors, ~2,000 queued jobs in the
  // simulator) it took 86% of the run time. The counter gives the same
  // answer in O(1) (same entries counted, finished-but-queued ones too).
  bool pipelining_possible = s_.runnable_pipelining > 0;
  OwnerBook& book = s_.owner_book;
  // Jobs that found no slot wait aside until the end: slots only get fewer
  // during a pump (a preempted copy's slot goes to the job that asked).
  std::vector<Job*>& aside = pump_aside_;
  std::vector<OwnerState*>& owners_aside = pump_owners_aside_;
  aside.clear();
  owners_aside.clear();
  uint32_t preempt_budget = kPreemptScan;
  uint64_t limit = 0;
  while (OwnerState* owner = book.Pick(&limit)) {
    Job* job = place_.PopRunnable(*owner);
    s_.counters.placement_visits++;
    if (!job || job->state != JobState::kRunning) {
      if (job) job->in_runnable = false;  // a finished job's last entry is gone
      book.MaybeForget(*owner);
      continue;
    }
    if (job->recovery_hold && s_.Now() >= s_.recovery_hold_until) job->recovery_hold = false;
    // Queueing tiny tasks beyond free slots only while no other owner
    // waits: queued work would hold the slots that owner is owed. Clones
    // only while no first attempt they yield to waits (core.copies_yield_to).
    const bool others_wait = book.Waiting() - (owner->entries > 0) + owners_aside.size() - size_t{owner->aside} > 0;
    const bool jobs_wait = s_.opt.CopiesYieldToJobs() ? book.Entries() > 0 || !aside.empty() : others_wait;
    uint32_t placed = 0;
    bool blocked = false, park = false;
    TaskIndex park_task = 0;
    while (placed < kQuantum && job->HasWork() && owner->slots < limit) {
      bool from_retry = !job->retry.empty();
      TaskIndex t = from_retry ? job->retry.front() : job->next_unlaunched;
      TaskPhase phase = job->tasks[t].phase;
      if (phase != (from_retry ? TaskPhase::kWaiting : TaskPhase::kUnlaunched)) {  // stale entry
        from_retry ? job->retry.pop_front() : void(job->next_unlaunched++);
        continue;
      }
      if (owner->OverQuota(std::max<uint32_t>(job->def.Task(t).cpu_slots, 1))) {  // waits for its own slots
        blocked = true;
        break;
      }
      // Restored: an attempt of it from before the restart may still run
      // on an executor not back yet (restore.cpp).
      if (job->recovery_hold && !s_.Idempotent(*job, t)) {
        blocked = true;
        break;
      }
      ExecutorId e = place_.PickFree(*job, t, false);
      const bool held = !e && place_.strategy().HeldLastPick();
      const uint32_t q = place_.QueuePerSlot(*job);
      if (!e && !others_wait && q > 0) e = place_.PickQueue(*job, t, q);
      if (!e) e = PreemptCopyFor(*job, t, &preempt_budget);
      if (!e) {
        // Feasibility only changes when executors come or go.
        if (job->feasibility_epoch != s_.executors_epoch) {
          job->feasibility_epoch = s_.executors_epoch;
          Status s = CheckFeasible(s_.executors, job->def.Task(t));
          if (!s.ok() && job->infeasible_since < 0) {
            job->infeasible_since = s_.Now();
            job->infeasible_why = s.message();
            TC_LOG(Warn) << "job " << job->id << " waits: " << s.message();
            if (!job->def.wait_for_resources)
              s_.job_timers.push({job->infeasible_since + s_.opt.infeasible_grace_s, job->id});
          } else if (s.ok()) {
            job->infeasible_since = -1;
          }
        }
        blocked = true;
        // Free slots exist and none takes it, every way was tried (no
        // better executor awaited, no queueing skipped, the copies looked
        // at): nothing but an executor's change can place it (Park).
        park =
            !held && (q == 0 || !others_wait) && preempt_budget > 0 && (!s_.free.empty() || !s_.free_avoided.empty());
        park_task = t;
        break;
      }
      from_retry ? job->retry.pop_front() : void(job->next_unlaunched++);
      life_.Launch(*job, t, e, false, from_retry);
      job->infeasible_since = -1;
      ++placed;
      // Clones only take idle slots: those beyond what this job's own
      // unlaunched first attempts need (else a clone would push one of them
      // into a second wave), and none while other jobs wait.
      const uint64_t unlaunched = job->Count() - job->next_unlaunched;
      for (uint32_t c = 0;
           !from_retry && !jobs_wait && c < job->clone_copies && s_.CopiesAllowed() > 0 && s_.free_slots > unlaunched &&
           !owner->OverQuota(std::max<uint32_t>(job->def.Task(t).cpu_slots, 1)) &&
           gate_.MayRunAgain(*job, t, "clone", "clone at launch");
           ++c) {
        ExecutorId ce = place_.PickFree(*job, t, true);
        if (!ce) break;
        life_.Launch(*job, t, ce, true);
      }
    }
    if (!job->HasWork()) {
      job->in_runnable = false;
    } else if (park) {
      place_.Park(*job, park_task);
    } else if (blocked) {
      aside.push_back(job);
      if (!owner->aside) owners_aside.push_back(owner);
      owner->aside = true;
    } else {
      place_.PushRunnable(*job);
    }
    if (blocked && s_.free.empty() && s_.free_avoided.empty() && !pipelining_possible &&
        (s_.live_copies.empty() || preempt_budget == 0))
      break;  // no slot anywhere, none to take from a copy
  }
  for (OwnerState* o : owners_aside) o->aside = false;
  s_.waiting_first.clear();
  for (Job* job : aside) {
    place_.PushRunnable(*job);
    s_.waiting_first.push_back(job->id);
  }
}

// A first attempt of task t of `job` found no free slot: cancels the newest
// live copy of another job whose executor then fits it (the copy's
// original keeps running), and returns that executor; 0 when none.
// `*budget` bounds the copies looked at per pump.
ExecutorId SchedulerCore::Impl::PreemptCopyFor(Job& job, TaskIndex t, uint32_t* budget) {
  if (s_.live_copies.empty()) return 0;
  const TaskDef& d = job.def.Task(t);
  const uint32_t need = std::max<uint32_t>(d.cpu_slots, 1);
  for (auto it = s_.live_copies.rbegin(); it != s_.live_copies.rend() && *budget > 0; ++it, --*budget) {
    const Attempt& c = s_.attempts.at(*it);
    if (c.job == job.id) continue;  // a job's own copies are its own choice
    Job& other = s_.jobs.at(c.job);
    if (other.owner == job.owner && !s_.opt.CopiesYieldToJobs()) continue;  // and an owner's
    if (other.tasks[c.task].live < 2) continue;  // its task's only attempt now: not redundant
    const ExecutorState& e = s_.executors.at(c.executor);
    if (e.quarantined || e.used_slots - c.slots + need > e.desc.slots || e.used_gpus - c.gpus + d.gpus > e.desc.gpus ||
        (e.desc.memory_mb && e.used_memory_mb - c.memory_mb + d.memory_mb > e.desc.memory_mb) || !Feasible(e, d))
      continue;
    const AttemptId id = c.id;
    const ExecutorId eid = c.executor;
    other.copies_preempted++;
    s_.counters.copies_preempted++;
    life_.ObserveUnfinished(other, c);  // how long it ran is a lower bound on its run time
    s_.Emit(CancelCmd{id, eid});
    life_.DropAttempt(id, AttemptOutcome::kCancelled, 0,
                      "copy preempted: job " + std::to_string(job.id) + "'s first attempt takes its slot");
    return place_.PickFree(job, t, false, eid);
  }
  return 0;
}

SchedulerCore::SchedulerCore(CoreOptions options, const Clock* clock, PolicyChain policies,
                             std::unique_ptr<PredictorSuite> predictors)
    : impl_(std::make_unique<Impl>(options, clock, std::move(policies), std::move(predictors))) {}
SchedulerCore::~SchedulerCore() = default;

namespace {
// Run times and progress come from executors (the wire): a NaN or infinite
// one would poison the job's typical run time (NaN cast to an integer in
// Placement::QueuePerSlot: undefined) and the predictors. A run time that
// is not a finite number >= 0 counts as unmeasured (0: the core measures
// the attempt itself); progress that is not a number as none.
double ReportedRunS(double run_s) { return std::isfinite(run_s) && run_s >= 0 ? run_s : 0; }
float ReportedProgress(float f) { return std::isnan(f) ? 0.0f : f; }

}  // namespace

StatusOr<JobId> SchedulerCore::SubmitJob(JobDef job) { return impl_->SubmitJob(std::move(job)); }
StatusOr<JobStatusInfo> SchedulerCore::CancelJob(JobId job, std::string reason) {
  return impl_->CancelJob(job, std::move(reason));
}
ExecutorId SchedulerCore::AddExecutor(ExecutorDesc desc) { return impl_->AddExecutor(std::move(desc)); }
void SchedulerCore::RemoveExecutor(ExecutorId e, bool lost, std::string reason) {
  impl_->RemoveExecutor(e, lost, std::move(reason));
}
void SchedulerCore::ExecutorSeen(ExecutorId e) { impl_->ExecutorSeen(e); }
void SchedulerCore::SetLostAfter(double s) { impl_->SetLostAfter(s); }
void SchedulerCore::DiscountStall(double s) { impl_->DiscountStall(s); }
void SchedulerCore::ExecutorSignals(ExecutorId e, uint32_t gpu_throttle_reasons) {
  impl_->ExecutorSignals(e, gpu_throttle_reasons);
}
void SchedulerCore::AttemptStarted(AttemptId a) { impl_->AttemptStarted(a); }
void SchedulerCore::AttemptProgress(AttemptId a, float f) { impl_->AttemptProgress(a, ReportedProgress(f)); }
void SchedulerCore::AttemptSucceeded(AttemptId a, std::string output, double run_s) {
  impl_->AttemptSucceeded(a, std::move(output), ReportedRunS(run_s));
}
void SchedulerCore::AttemptFailed(AttemptId a, std::string error, double run_s) {
  impl_->AttemptFailed(a, std::move(error), ReportedRunS(run_s));
}
void SchedulerCore::AttemptDropped(AttemptId a, std::string why) { impl_->AttemptDropped(a, std::move(why)); }
Status SchedulerCore::AdoptAttempt(AttemptId a, JobId job, TaskIndex task, ExecutorId e, bool started) {
  return impl_->AdoptAttempt(a, job, task, e, started);
}
bool SchedulerCore::CommitOrphanResult(JobId job, TaskIndex task, AttemptId a, ExecutorId e, std::string output,
                                       double run_s) {
  return impl_->CommitOrphanResult(job, task, a, e, std::move(output), ReportedRunS(run_s));
}
void SchedulerCore::Tick() { impl_->Tick(); }
void SchedulerCore::ReserveIds(JobId next_job, AttemptId next_attempt, AttemptId earlier_from) {
  impl_->ReserveIds(next_job, next_attempt, earlier_from);
}
std::vector<AttemptId> SchedulerCore::RestoreLaunches(std::vector<JournaledLaunch> launches, AttemptId journaled_from) {
  return impl_->RestoreLaunches(std::move(launches), journaled_from);
}
bool SchedulerCore::AcceptsReport(ExecutorId e, AttemptId a) { return impl_->AcceptsReport(e, a); }
Status SchedulerCore::RestoreJob(JobId id, JobDef def, Time submitted, std::vector<CommittedOutput> commits,
                                 std::vector<uint64_t> share_counts, AttemptId shares_since,
                                 std::vector<PendingPromotion> promotions) {
  return impl_->RestoreJob(id, std::move(def), submitted, std::move(commits), share_counts, shares_since,
                           std::move(promotions));
}
Status SchedulerCore::RestoreFinishedJob(JobId id, JobDef def, const JobStatusInfo& status,
                                         std::vector<CommittedOutput> outputs,
                                         std::vector<PendingPromotion> promotions) {
  return impl_->RestoreFinishedJob(id, std::move(def), status, std::move(outputs), std::move(promotions));
}
bool SchedulerCore::OutputPromoted(JobId job, TaskIndex task, AttemptId attempt) {
  return impl_->AnswerPromotion(job, task, attempt, "");
}
bool SchedulerCore::PromotionFailed(JobId job, TaskIndex task, AttemptId attempt, const std::string& error) {
  return impl_->AnswerPromotion(job, task, attempt, error.empty() ? "no reason given" : error);
}
std::vector<PromoteCmd> SchedulerCore::PendingPromotions() const { return impl_->PendingPromotions(); }
void SchedulerCore::TakeCommands(std::vector<Command>* out) { impl_->TakeCommands(out); }
Time SchedulerCore::NextWakeUp() const { return impl_->NextWakeUp(); }
double SchedulerCore::PolicyInterval() const { return impl_->PolicyInterval(); }
StatusOr<JobStatusInfo> SchedulerCore::JobStatus(JobId job) const { return impl_->Status_(job); }
StatusOr<std::vector<CommittedOutput>> SchedulerCore::JobOutputs(JobId job) const { return impl_->Outputs(job); }
std::vector<ExecutorStatusInfo> SchedulerCore::Executors() const { return impl_->ExecutorList(); }
std::vector<ExecutorStatusInfo> SchedulerCore::Executors(ExecutorId after, size_t limit) const {
  return impl_->ExecutorList(after, limit);
}
size_t SchedulerCore::ExecutorCount() const { return impl_->ExecutorCount(); }
Status SchedulerCore::TaskInputs(JobId job, TaskIndex task, std::vector<ResolvedInput>* out) {
  return impl_->TaskInputs(job, task, out);
}
std::vector<JobId> SchedulerCore::ParentsOfUnfinished() const { return impl_->ParentsOfUnfinished(); }
const TaskDef* SchedulerCore::TaskOf(JobId job, TaskIndex task) const { return impl_->TaskOf(job, task); }
const JobDef* SchedulerCore::JobDefOf(JobId job) const { return impl_->JobDefOf(job); }
bool SchedulerCore::FixedShares(JobId job, std::vector<uint64_t>* counts, AttemptId* since) const {
  return impl_->FixedShares(job, counts, since);
}
bool SchedulerCore::HasExecutor(ExecutorId e) const { return impl_->HasExecutor(e); }
ExecutorId SchedulerCore::ExecutorOfAttempt(AttemptId a) const { return impl_->ExecutorOfAttempt(a); }
uint64_t SchedulerCore::AttemptsHandedTo(ExecutorId e) const { return impl_->AttemptsHandedTo(e); }
size_t SchedulerCore::LiveAttempts() const { return impl_->LiveAttempts(); }
size_t SchedulerCore::RunningJobs() const { return impl_->RunningJobs(); }
uint64_t SchedulerCore::QueuedTasks() const { return impl_->QueuedTasks(); }
uint64_t SchedulerCore::WaitingTasks() const { return impl_->WaitingTasks(); }
const CoreCounters& SchedulerCore::Counters() const { return impl_->Counters(); }
std::vector<OwnerShareInfo> SchedulerCore::OwnerShares() const { return impl_->OwnerShares(); }
Status SchedulerCore::CheckAdmission(uint64_t tasks) const { return impl_->CheckAdmission(tasks); }
std::vector<JobId> SchedulerCore::RunningJobIds() const { return impl_->RunningJobIds(); }
const PredictorSuite* SchedulerCore::Predictors() const { return impl_->Predictors(); }
std::vector<std::string> SchedulerCore::DisabledPolicies() const { return impl_->DisabledPolicies(); }
void SchedulerCore::AddObserver(CoreObserver* observer) { impl_->AddObserver(observer); }
const CoreOptions& SchedulerCore::options() const { return impl_->options(); }

}  // namespace tailcut
