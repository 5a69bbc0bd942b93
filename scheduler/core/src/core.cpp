// SchedulerCore: the facade over the core's pieces and its event handlers.
// State lives in core_state.h; feasibility.h, placement.h, lifecycle.h,
// proposal_gate.h, cluster_view.h, restore.h (recovery) and queries.h each
// do one job on it.
#include "tailcut/core/scheduler_core.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <sstream>

#include "cluster_view.h"
#include "core_state.h"
#include "feasibility.h"
#include "lifecycle.h"
#include "placement.h"
#include "policy_guard.h"
#include "proposal_gate.h"
#include "queries.h"
#include "restore.h"
#include "tailcut/common/log.h"

namespace tailcut {

using namespace core;  // NOLINT: this file is the core's own implementation

class SchedulerCore::Impl final {
 public:
  Impl(CoreOptions o, const Clock* clock, PolicyChain policies, std::unique_ptr<PredictorSuite> predictors)
      : s_(o, clock, std::move(policies), std::move(predictors)),
        view_(s_),
        place_(s_, view_),
        life_(s_, place_),
        gate_(s_, place_, life_) {}

  // ------------------------------------------------------------ events --
  StatusOr<JobId> SubmitJob(JobDef def) {
    Status s = CheckAdmission(uint64_t{def.tasks.size()} + def.template_count);
    if (s.ok()) SortLabels(def);
    if (s.ok()) s = ValidateJob(s_.executors, def);
    if (s.ok()) s = ValidateDivisible(def);
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

  Status CheckAdmission(uint64_t tasks) const { return core::CheckAdmission(s_, tasks); }

  // --- recovery (restore.h)
  void ReserveIds(JobId next_job, AttemptId next_attempt, AttemptId earlier_from) {
    core::ReserveIds(s_, next_job, next_attempt, earlier_from);
  }
  Status RestoreJob(JobId id, JobDef def, Time submitted, std::vector<CommittedOutput> commits,
                    const std::vector<uint64_t>& share_counts, AttemptId shares_since,
                    std::vector<PendingPromotion> promotions) {
    return core::RestoreJob(s_, life_, id, std::move(def), submitted, std::move(commits), share_counts, shares_since,
                            std::move(promotions));
  }
  Status RestoreFinishedJob(JobId id, JobDef def, const JobStatusInfo& st, std::vector<CommittedOutput> outputs,
                            std::vector<PendingPromotion> promotions) {
    return core::RestoreFinishedJob(s_, life_, id, std::move(def), st, std::move(outputs), std::move(promotions));
  }
  bool UnknownShare(const Job& job, AttemptId a) const { return core::UnknownShare(s_, job, a); }

  // --- output promotion (lifecycle.h)
  bool AnswerPromotion(JobId id, TaskIndex t, AttemptId a, const std::string& error) {
    return life_.AnswerPromotion(id, t, a, error);
  }
  std::vector<PromoteCmd> PendingPromotions() const {
    std::vector<PromoteCmd> out;
    out.reserve(s_.promotions.size());
    for (const auto& [key, cmd] : s_.promotions) out.push_back(cmd);
    return out;
  }

  StatusOr<JobStatusInfo> CancelJob(JobId id, std::string reason) {
    Job* job = s_.FindJob(id);
    if (!job) return Status::NotFound("no job " + std::to_string(id));
    if (job->state != JobState::kRunning)
      return Status::FailedPrecondition("job " + std::to_string(id) + " already " + JobStateName(job->state));
    return life_.FinishJob(*job, JobState::kCancelled, std::move(reason));
  }

  ExecutorId AddExecutor(ExecutorDesc desc) {
    ExecutorId id = life_.AddExecutor(std::move(desc)).id;
    s_.dirty = true;
    return id;
  }

  void RemoveExecutor(ExecutorId id, bool lost, std::string reason) {
    auto it = s_.executors.find(id);
    if (it == s_.executors.end()) return;
    std::vector<AttemptId> ids(it->second.attempts.begin(), it->second.attempts.end());
    std::sort(ids.begin(), ids.end());  // deterministic requeue order
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
    s_.total_slots -= it->second.desc.slots;
    s_.free_slots -= CoreState::FreeSlotsOf(it->second);
    s_.executors_epoch++;
    place_.ForgetExecutor(id);
    s_.predictors->ForgetExecutor(id);
    if (lost) {
      TC_LOG(Warn) << "executor " << id << " (" << it->second.desc.name << ") lost: " << reason << "; "
                   << ids.size() << " attempts rescheduled";
      s_.Emit(ExecutorChangedCmd{id, ExecutorChangedCmd::Change::kLost, reason});
    }
    s_.executors.erase(it);
    s_.PostExecutor(id, lost ? ExecutorChange::kLost : ExecutorChange::kLeft);
    s_.dirty = true;
  }

  void ExecutorSeen(ExecutorId id) {
    if (Executor* e = s_.FindExec(id)) s_.Heard(*e);
  }

  void SetLostAfter(double s) { s_.opt.lost_after_s = s; }

  void ExecutorSignals(ExecutorId id, uint32_t gpu_throttle_reasons) {
    if (!s_.FindExec(id)) return;
    s_.predictors->NoteGpuThrottle(id, gpu_throttle_reasons, s_.Now());
    for (auto& [e, state] : s_.predictors->HealthTransitions())
      TC_LOG(Info) << "executor " << e << " health: " << NodeHealthName(state.state) << " (speed factor "
                   << state.speed_factor << ")";
  }

  bool AcceptsReport(ExecutorId e, AttemptId id) {
    auto it = s_.attempts.find(id);
    if (it != s_.attempts.end() && it->second.executor == e) return true;
    // Ended attempts (late results, cancelled copies) are only ignored; an
    // attempt live elsewhere or never issued was never this executor's.
    if (it != s_.attempts.end() || id == 0 || id >= s_.next_attempt_id) Refuse(e, id, "never handed to it");
    return false;
  }

  void AttemptStarted(AttemptId id) {
    auto it = s_.attempts.find(id);
    if (it != s_.attempts.end() && it->second.started < 0) MarkStarted(it->second);
  }

  void AttemptProgress(AttemptId id, float fraction) {
    auto it = s_.attempts.find(id);
    // std::clamp passes NaN through; policies compare progress rates.
    if (it == s_.attempts.end() || std::isnan(fraction)) return;
    it->second.progress = std::clamp(fraction, 0.0f, 1.0f);
    s_.PostAttempt(PolicyEvent::Kind::kProgress, it->second);
  }

  void AttemptSucceeded(AttemptId id, std::string output, double run_s) {
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
    NoteReportLag(a, run_s);
    life_.EndAttempt(a, AttemptOutcome::kCommitted, run_s);
    Commit(job, a.task, a.id, a.executor, std::move(output), run_s, a.copy);
  }

  // One sample of CoreState::report_lag: the age the core saw minus the
  // run time the executor measured (only when it measured one).
  void NoteReportLag(const Attempt& a, double run_s) {
    if (a.started < 0 || !(run_s > 0)) return;
    double lag = std::max(0.0, s_.Now() - a.started - run_s);
    constexpr double kAlpha = 0.05;
    s_.report_lag += kAlpha * (lag - s_.report_lag);
  }

  bool CommitOrphanResult(JobId j, TaskIndex t, AttemptId a, ExecutorId e, std::string output, double run_s) {
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
    Commit(*job, t, a, e, std::move(output), run_s);
    return true;
  }

  Status AdoptAttempt(AttemptId id, JobId j, TaskIndex t, ExecutorId eid, bool started) {
    Executor* e = s_.FindExec(eid);
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
      return Status::FailedPrecondition("attempt " + std::to_string(id) +
                                        " runs a share of divisible job " + std::to_string(j) +
                                        " from before the restart; the task runs again");
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
    s_.held.erase(id);
    s_.next_attempt_id = std::max(s_.next_attempt_id, id + 1);  // ids never repeat
    if (started) MarkStarted(a);
    s_.dirty = true;
    return Status::Ok();
  }

  void AttemptFailed(AttemptId id, std::string error, double run_s) {
    auto it = s_.attempts.find(id);
    if (it == s_.attempts.end()) return;
    Answered(it->second.executor);
    FailAttempt(it->second, std::move(error), run_s);
  }

  void AttemptDropped(AttemptId id, std::string why) {
    if (s_.attempts.count(id)) life_.DropAttempt(id, AttemptOutcome::kExecutorLost, 0, std::move(why));
  }

  void Tick() {
    Time now = s_.Now();
    if (s_.opt.lost_after_s > 0) {
      // Only the entries older than the timeout. An executor's newest
      // entry is at most a quarter timeout older than when it was last
      // heard (Heard), so one heard since stays at the front until it is
      // due or heard again (then a newer entry makes this one stale): the
      // entries behind it wait at most that quarter.
      std::vector<ExecutorId> lost;
      while (!s_.heard.empty() && now - s_.heard.front().first > s_.opt.lost_after_s) {
        auto [t, id] = s_.heard.front();
        Executor* e = s_.FindExec(id);
        if (e && e->heard_queued == t && now - e->last_seen <= s_.opt.lost_after_s) break;  // not due yet
        s_.heard.pop_front();
        if (e && e->heard_queued == t) lost.push_back(id);  // else gone, or queued again since
      }
      std::sort(lost.begin(), lost.end());  // deterministic order
      for (ExecutorId id : lost)
        RemoveExecutor(id, true, "no heartbeat for " + std::to_string(s_.opt.lost_after_s) + " s");
    }
    ExpireDeadlines(now);
    std::vector<JobId> check(s_.running_jobs.begin(), s_.running_jobs.end());
    for (JobId id : check) {
      Job& job = s_.jobs.at(id);
      const CompletionRule& r = job.def.rule;
      if (r.kind == CompletionKind::kQuorum && r.deadline_s > 0 && now >= job.submitted + r.deadline_s) {
        std::string summary = std::to_string(job.committed) + " of " + std::to_string(job.Count()) + " reported";
        if (job.committed >= std::max<uint32_t>(r.min_count, 1))
          life_.FinishJob(job, JobState::kSucceeded, "quorum closed at deadline: " + summary);
        else
          life_.FinishJob(job, JobState::kFailed, "deadline passed with " + summary + ", fewer than min_count " +
                                                      std::to_string(r.min_count));
        continue;
      }
      if (!job.def.wait_for_resources && job.infeasible_since >= 0 &&
          now - job.infeasible_since >= s_.opt.infeasible_grace_s) {
        life_.FinishJob(job, JobState::kFailed, job.infeasible_why);
      }
    }
    if (!s_.policies.empty() && now >= s_.next_policy_time) {
      s_.next_policy_time = now + PolicyInterval();
      std::vector<Proposal> proposals;
      for (uint32_t i = 0; i < s_.policies.size(); ++i) {
        GuardedPolicy& p = s_.policies[i];
        proposals.clear();
        if (CallPolicy(p, "OnTick", [&](MitigationPolicy& m) { m.OnTick(view_, &proposals); }))
          gate_.ApplyAll(proposals, p.name, i);
      }
      // Advice that changes with time alone is caught here: O(executors)
      // per policy interval, not per placement.
      place_.RefreshAvoidAll();
    }
    s_.dirty = true;
  }

  void TakeCommands(std::vector<Command>* out) {
    // Placement first, so policies see the cluster as it is; what they
    // propose may end or launch attempts (more events) and free slots
    // (placement again). A policy that keeps reacting to its own effects
    // is cut off after kMaxRounds; the rest waits for the next call.
    constexpr int kMaxRounds = 64;
    for (int round = 0; round < kMaxRounds; ++round) {
      if (s_.dirty) Pump();
      s_.dirty = false;
      if (!DeliverPolicyEvents()) break;
    }
    s_.shares.Stamp(&s_.commands);
    if (out->empty()) {
      out->swap(s_.commands);
    } else {
      std::move(s_.commands.begin(), s_.commands.end(), std::back_inserter(*out));
      s_.commands.clear();
    }
  }

  double PolicyInterval() const {
    const CoreOptions& o = s_.opt;
    // Without policies nothing runs at the interval: drivers keep ticking at
    // policy_interval_s (a `none` run does not depend on the task scale).
    if (s_.policies.empty() || o.policy_interval_ratio <= 0 || s_.typical_run_s <= 0) return o.policy_interval_s;
    return std::clamp(o.policy_interval_ratio * s_.typical_run_s, o.policy_interval_min_s, o.policy_interval_max_s);
  }
  Time NextWakeUp() const { return s_.wakeups.empty() ? -1 : s_.wakeups.top().at; }

  // ----------------------------------------------------------- queries --
  StatusOr<JobStatusInfo> Status_(JobId id) const { return core::JobStatusOf(s_, id); }
  StatusOr<std::vector<CommittedOutput>> Outputs(JobId id) const { return core::JobOutputsOf(s_, id); }
  std::vector<ExecutorStatusInfo> ExecutorList() const { return core::ExecutorList(s_); }
  bool FixedShares(JobId id, std::vector<uint64_t>* counts, AttemptId* since) const {
    return core::FixedShares(s_, id, counts, since);
  }

  const TaskDef* TaskOf(JobId j, TaskIndex t) const { return core::TaskOf(s_, j, t); }
  const JobDef* JobDefOf(JobId j) const {
    const Job* job = s_.FindJob(j);
    return job ? &job->def : nullptr;
  }
  bool HasExecutor(ExecutorId e) const { return s_.executors.count(e) > 0; }
  ExecutorId ExecutorOfAttempt(AttemptId a) const {
    auto it = s_.attempts.find(a);
    return it == s_.attempts.end() ? 0 : it->second.executor;
  }
  size_t LiveAttempts() const { return s_.attempts.size(); }
  size_t RunningJobs() const { return s_.running_jobs.size(); }
  uint64_t QueuedTasks() const { return s_.queued_tasks; }
  uint64_t WaitingTasks() const { return core::WaitingTasks(s_); }
  const CoreCounters& Counters() const { return s_.counters; }
  std::vector<JobId> RunningJobIds() const { return {s_.running_jobs.begin(), s_.running_jobs.end()}; }
  const PredictorSuite* Predictors() const { return s_.predictors.get(); }
  std::vector<std::string> DisabledPolicies() const { return core::DisabledPolicies(s_); }
  void AddObserver(CoreObserver* o) { s_.observers.push_back(o); }
  const CoreOptions& options() const { return s_.opt; }

 private:
  // Delivers the queued events and the wake-ups due now that were asked for
  // before this call; false when there was nothing to deliver.
  bool DeliverPolicyEvents() {
    bool any = false;
    std::vector<Proposal> proposals;
    auto call = [&](uint32_t i, std::string_view hook, auto&& fn) {
      GuardedPolicy& p = s_.policies[i];
      proposals.clear();
      if (CallPolicy(p, hook, fn)) gate_.ApplyAll(proposals, p.name, i);
    };
    if (!s_.policy_events.empty()) {
      any = true;
      std::vector<PolicyEvent> events;
      events.swap(s_.policy_events);
      for (const PolicyEvent& ev : events) {
        const AttemptView& a = ev.attempt;
        for (uint32_t i = 0; i < s_.policies.size(); ++i) {
          switch (ev.kind) {
            case PolicyEvent::Kind::kLaunched:
              call(i, "OnAttemptLaunched", [&](MitigationPolicy& m) { m.OnAttemptLaunched(view_, a, &proposals); });
              break;
            case PolicyEvent::Kind::kStarted:
              call(i, "OnAttemptStarted", [&](MitigationPolicy& m) { m.OnAttemptStarted(view_, a, &proposals); });
              break;
            case PolicyEvent::Kind::kProgress:
              call(i, "OnAttemptProgress", [&](MitigationPolicy& m) { m.OnAttemptProgress(view_, a, &proposals); });
              break;
            case PolicyEvent::Kind::kEnded:
              call(i, "OnAttemptEnded",
                   [&](MitigationPolicy& m) { m.OnAttemptEnded(view_, a, ev.end, &proposals); });
              break;
            case PolicyEvent::Kind::kExecutor:
              call(i, "OnExecutorChanged",
                   [&](MitigationPolicy& m) { m.OnExecutorChanged(view_, ev.executor, ev.change, &proposals); });
              break;
          }
        }
        // The policies' own view of the executor may have changed with it.
        ExecutorId e = ev.kind == PolicyEvent::Kind::kEnded      ? a.executor
                       : ev.kind == PolicyEvent::Kind::kExecutor ? ev.executor
                                                                 : 0;
        if (Executor* x = e ? s_.FindExec(e) : nullptr) place_.RefreshAvoid(*x);
      }
    }
    const Time now = s_.Now();
    const uint64_t asked_before = s_.wakeup_seq;
    while (!s_.wakeups.empty() && s_.wakeups.top().at <= now && s_.wakeups.top().seq < asked_before) {
      PolicyWakeUp w = s_.wakeups.top();
      s_.wakeups.pop();
      auto it = s_.attempts.find(w.attempt);
      if (it == s_.attempts.end()) continue;  // ended meanwhile: dropped
      any = true;
      AttemptView a = s_.ViewOf(it->second);
      call(w.policy, "OnWakeUp", [&](MitigationPolicy& m) { m.OnWakeUp(view_, a, &proposals); });
    }
    return any;
  }

  void MarkStarted(Attempt& a) {
    a.started = s_.Now();
    s_.PostAttempt(PolicyEvent::Kind::kStarted, a);
  }

  // --- who may report what (docs/SECURITY.md, "Results only for work handed out") ---
  void Refuse(ExecutorId e, AttemptId a, const char* why) {
    s_.counters.reports_refused++;
    TC_LOG(Debug) << "executor " << e << ": report about attempt " << a << " refused: " << why;
  }

  // Attempt `a` of (j, t) was handed to an executor of e's identity that
  // left since, or to anyone in an earlier run; and e offers its kernel.
  Status HeldBy(AttemptId a, JobId j, TaskIndex t, ExecutorId eid) {
    const Executor* e = s_.FindExec(eid);
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
    }
    if (const TaskDef* d = TaskOf(j, t); d && !e->kernels.count(d->kernel)) return refuse("kernel not offered by it");
    return Status::Ok();
  }

  // Remembers that `a` was live on `e` when `e` left (HeldAttempt).
  void Hold(const Executor& e, const Attempt& a) {
    if (!s_.held.emplace(a.id, HeldAttempt{e.identity, a.job, a.task}).second) return;
    s_.held_order.push_back(a.id);
    while (s_.held_order.size() > CoreState::kMaxHeldAttempts) {
      s_.held.erase(s_.held_order.front());
      s_.held_order.pop_front();
    }
  }

  // The executor answered about an attempt: it is not unresponsive.
  void Answered(ExecutorId id) {
    if (Executor* e = s_.FindExec(id)) e->timeouts_in_a_row = 0;
  }

  // An executor whose last attempts all timed out takes no more work until
  // it registers again (a quarantine outside the policies' cap: it gives no
  // capacity anyway).
  void NoteTimeout(ExecutorId id) {
    Executor* e = s_.FindExec(id);
    if (!e || e->unresponsive || ++e->timeouts_in_a_row < s_.opt.unresponsive_after_timeouts ||
        s_.opt.unresponsive_after_timeouts == 0)
      return;
    e->unresponsive = true;
    std::string reason = "its last " + std::to_string(e->timeouts_in_a_row) + " attempts timed out";
    TC_LOG(Warn) << "executor " << id << " (" << e->desc.name << ") unresponsive: " << reason;
    if (e->quarantined) return;
    s_.ChangeSlots(*e, [&] { e->quarantined = true; });
    place_.RefreshAvoid(*e);
    place_.MarkFree(*e);
    s_.PostExecutor(id, ExecutorChange::kQuarantined);
    s_.Emit(ExecutorChangedCmd{id, ExecutorChangedCmd::Change::kQuarantined, reason});
  }

  // Attempts and jobs past their time limit: O(log n) per deadline.
  void ExpireDeadlines(Time now) {
    while (!s_.attempt_deadlines.empty() && s_.attempt_deadlines.top().first <= now) {
      AttemptId id = s_.attempt_deadlines.top().second;
      s_.attempt_deadlines.pop();
      auto it = s_.attempts.find(id);
      if (it == s_.attempts.end()) continue;  // ended in time
      Attempt a = it->second;
      s_.counters.attempts_timed_out++;
      s_.Emit(CancelCmd{id, a.executor});
      FailAttempt(a, "attempt exceeded its time limit of " + FormatLimit(a.deadline - a.queued) + " s since launch",
                  now - (a.started >= 0 ? a.started : a.queued));
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
    }
  }

  static std::string FormatLimit(double s) {
    std::ostringstream o;
    o << s;
    return o.str();
  }

  // An attempt lost with its executor, started or only assigned (its
  // `started` may never have reached us: a task that crashes its executor at
  // once): a failed attempt, so a poison task fails its job after
  // max_attempts executors, not the fleet.
  void CountLoss(Attempt a) {
    FailAttempt(a, "its executor was lost while it held the attempt (the task may crash its executor)",
                s_.Now() - (a.started >= 0 ? a.started : a.queued), AttemptOutcome::kExecutorLost);
  }

  // Ends live attempt `a` as failed (recorded with `outcome`: an executor
  // loss stays one in the trace); requeues its task or, at max_attempts,
  // marks it dead (which may end the job).
  void FailAttempt(Attempt a, std::string error, double run_s,  // a copy: EndAttempt erases it
                   AttemptOutcome outcome = AttemptOutcome::kFailed) {
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
  void Commit(Job& job, TaskIndex t, AttemptId attempt, ExecutorId eid, std::string output, double run_s,
              bool copy = false) {
    if (Executor* e = s_.FindExec(eid)) e->finished++;
    life_.RecordCommit(job, t, attempt, eid, run_s, std::move(output), /*notify=*/true, copy);
    life_.EndLiveAttempts(job, t, AttemptOutcome::kSuperseded);
    if (job.Complete()) life_.FinishJob(job, JobState::kSucceeded, "");
    s_.dirty = true;
  }

  static bool CanStillComplete(const Job& job) {
    switch (job.def.rule.kind) {
      case CompletionKind::kAll: return job.dead == 0;
      case CompletionKind::kKOfN: return job.Count() - job.dead >= job.def.rule.k;
      case CompletionKind::kQuorum:
        return job.Count() - job.dead >= std::max<uint32_t>(job.def.rule.min_count, 1);
    }
    return false;
  }

  // Places queued tasks on executors, round-robin over runnable jobs.
  void Pump() {
    constexpr uint32_t kQuantum = 64;  // tasks per job per round: small jobs are not starved
    size_t rounds_without_progress = 0;
    // Some job in runnable may queue beyond slots. Performance: this was a
    // scan of runnable on every Pump, i.e. O(runnable jobs) after every
    // event; with a backlog (10,000 executors, ~2,000 queued jobs in the
    // simulator) it took 86% of the run time. The counter gives the same
    // answer in O(1) (same entries counted, finished-but-queued ones too).
    bool pipelining_possible = s_.runnable_pipelining > 0;
    while (!s_.runnable.empty() && rounds_without_progress < s_.runnable.size()) {
      Job* job = place_.PopRunnable();
      if (!job || job->state != JobState::kRunning) {
        if (job) job->in_runnable = false;  // a finished job's last entry is gone
        continue;
      }
      uint32_t placed = 0;
      bool blocked = false;
      while (placed < kQuantum && job->HasWork()) {
        bool from_retry = !job->retry.empty();
        TaskIndex t = from_retry ? job->retry.front() : job->next_unlaunched;
        TaskPhase phase = job->tasks[t].phase;
        if (phase != (from_retry ? TaskPhase::kWaiting : TaskPhase::kUnlaunched)) {  // stale entry
          from_retry ? job->retry.pop_front() : void(job->next_unlaunched++);
          continue;
        }
        ExecutorId e = place_.PickFree(*job, t, false);
        if (!e) {
          uint32_t q = place_.QueuePerSlot(*job);
          if (q > 0) e = place_.PickQueue(*job, t, q);
        }
        if (!e) {
          // Feasibility only changes when executors come or go.
          if (job->feasibility_epoch != s_.executors_epoch) {
            job->feasibility_epoch = s_.executors_epoch;
            Status s = CheckFeasible(s_.executors, job->def.Task(t));
            if (!s.ok() && job->infeasible_since < 0) {
              job->infeasible_since = s_.Now();
              job->infeasible_why = s.message();
              TC_LOG(Warn) << "job " << job->id << " waits: " << s.message();
            } else if (s.ok()) {
              job->infeasible_since = -1;
            }
          }
          blocked = true;
          break;
        }
        from_retry ? job->retry.pop_front() : void(job->next_unlaunched++);
        life_.Launch(*job, t, e, false, from_retry);
        job->infeasible_since = -1;
        ++placed;
        for (uint32_t c = 0; !from_retry && c < job->clone_copies && s_.CopiesAllowed() > 0 &&
                             gate_.MayRunAgain(*job, t, "clone", "clone at launch");
             ++c) {
          ExecutorId ce = place_.PickFree(*job, t, true);
          if (!ce) break;
          life_.Launch(*job, t, ce, true);
        }
      }
      if (job->HasWork()) {
        place_.PushRunnable(*job);
      } else {
        job->in_runnable = false;
      }
      rounds_without_progress = (placed == 0 && blocked) ? rounds_without_progress + 1 : 0;
      if (blocked && s_.free.empty() && s_.free_avoided.empty() && !pipelining_possible) break;  // no slot anywhere
    }
  }

  CoreState s_;
  StateView view_;
  Placement place_;
  Lifecycle life_;
  ProposalGate gate_;
};
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
const TaskDef* SchedulerCore::TaskOf(JobId job, TaskIndex task) const { return impl_->TaskOf(job, task); }
const JobDef* SchedulerCore::JobDefOf(JobId job) const { return impl_->JobDefOf(job); }
bool SchedulerCore::FixedShares(JobId job, std::vector<uint64_t>* counts, AttemptId* since) const {
  return impl_->FixedShares(job, counts, since);
}
bool SchedulerCore::HasExecutor(ExecutorId e) const { return impl_->HasExecutor(e); }
ExecutorId SchedulerCore::ExecutorOfAttempt(AttemptId a) const { return impl_->ExecutorOfAttempt(a); }
size_t SchedulerCore::LiveAttempts() const { return impl_->LiveAttempts(); }
size_t SchedulerCore::RunningJobs() const { return impl_->RunningJobs(); }
uint64_t SchedulerCore::QueuedTasks() const { return impl_->QueuedTasks(); }
uint64_t SchedulerCore::WaitingTasks() const { return impl_->WaitingTasks(); }
const CoreCounters& SchedulerCore::Counters() const { return impl_->Counters(); }
Status SchedulerCore::CheckAdmission(uint64_t tasks) const { return impl_->CheckAdmission(tasks); }
std::vector<JobId> SchedulerCore::RunningJobIds() const { return impl_->RunningJobIds(); }
const PredictorSuite* SchedulerCore::Predictors() const { return impl_->Predictors(); }
std::vector<std::string> SchedulerCore::DisabledPolicies() const { return impl_->DisabledPolicies(); }
void SchedulerCore::AddObserver(CoreObserver* observer) { impl_->AddObserver(observer); }
const CoreOptions& SchedulerCore::options() const { return impl_->options(); }

}  // namespace tailcut
