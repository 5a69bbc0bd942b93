#include "proposal_gate.h"

#include <cmath>
#include <string>

#include "tailcut/common/log.h"

namespace tailcut::core {

size_t QuarantineCap(double share, size_t fleet) {
  size_t cap = static_cast<size_t>(share * fleet);
  if (fleet >= 3) cap = std::max<size_t>(cap, 1);
  return std::min(cap, fleet / 2);  // never more than half the fleet
}

bool ProposalGate::MayRunAgain(Job& job, TaskIndex t, std::string_view what, std::string_view policy) {
  if (s_.Idempotent(job, t)) return true;
  Task& task = job.tasks[t];
  if (!task.copy_refused) {
    task.copy_refused = true;
    job.copies_refused++;
    const std::string& kernel = job.def.Task(t).kernel;
    std::string why = "task is not idempotent (kernel " + kernel +
                      "; set idempotent = true on the job if running it twice is harmless)";
    TC_LOG(Info) << policy << ": no " << what << " of job " << job.id << " task " << t << ": " << why;
    for (CoreObserver* o : s_.observers) o->OnCopyRefused(job.id, t, what, why);
  }
  return false;
}

void ProposalGate::Quarantine(ExecutorState& e, const std::string& reason) {
  if (e.quarantined) return;
  s_.ChangeSlots(e, [&] { e.quarantined = true; });
  s_.quarantined++;
  place_.RefreshAvoid(e);
  place_.MarkFree(e);  // the strategy takes its capacity out
  s_.PostExecutor(e.id, ExecutorChange::kQuarantined);
  s_.Emit(ExecutorChangedCmd{e.id, ExecutorChangedCmd::Change::kQuarantined, reason});
}

void ProposalGate::Release(ExecutorState& e, const std::string& reason) {
  if (!e.quarantined) return;
  s_.ChangeSlots(e, [&] { e.quarantined = false; });
  s_.quarantined--;
  place_.RefreshAvoid(e);
  place_.MarkFree(e);
  s_.PostExecutor(e.id, ExecutorChange::kReleased);
  s_.Emit(ExecutorChangedCmd{e.id, ExecutorChangedCmd::Change::kReleased, reason});
  s_.dirty = true;
}

bool ProposalGate::FirstAttemptWants(const Job& job, const ExecutorState& e) const {
  // Bounded: past this many waiting jobs, assume one of them fits.
  constexpr size_t kScan = 64;
  size_t looked = 0;
  for (JobId id : s_.waiting_first) {
    const Job* w = s_.FindJob(id);
    if (!w || w->id == job.id || w->state != JobState::kRunning || !w->HasWork()) continue;
    if (w->owner == job.owner && !s_.opt.CopiesYieldToJobs()) continue;  // its owner's own trade
    if (++looked > kScan) return true;
    TaskIndex t = !w->retry.empty() ? w->retry.front() : w->next_unlaunched;
    if (t < w->Count() && !w->owner->OverQuota(std::max<uint32_t>(w->def.Task(t).cpu_slots, 1)) &&
        place_.Fits(*w, t, e, false))
      return true;
  }
  return false;
}

void ProposalGate::ApplyAll(const std::vector<Proposal>& proposals, std::string_view policy, uint32_t index) {
  for (const Proposal& p : proposals) Apply(p, policy, index);
}

void ProposalGate::Apply(const Proposal& p, std::string_view policy, uint32_t index) {
  switch (p.kind) {
    case Proposal::Kind::kLaunchCopy: {
      Job* job = s_.FindJob(p.job);
      if (!job || job->state != JobState::kRunning || p.task >= job->Count()) return;
      Task& task = job->tasks[p.task];
      if (task.phase != TaskPhase::kActive || task.live == 0 || s_.CopiesAllowed() == 0) return;
      if (!MayRunAgain(*job, p.task, "copy", policy)) return;
      if (job->owner->OverQuota(std::max<uint32_t>(job->def.Task(p.task).cpu_slots, 1))) return;
      ExecutorId e = place_.PickFree(*job, p.task, true, p.executor);
      if (!e || FirstAttemptWants(*job, s_.executors.at(e))) return;
      TC_LOG(Debug) << policy << ": copy of job " << p.job << " task " << p.task << " on executor " << e << ": "
                    << p.reason;
      life_.Launch(*job, p.task, e, true);
      return;
    }
    case Proposal::Kind::kCloneAtLaunch: {
      if (Job* job = s_.FindJob(p.job)) job->clone_copies = std::min<uint32_t>(p.copies, 8);
      return;
    }
    case Proposal::Kind::kCancelAttempt: {
      auto it = s_.attempts.find(p.attempt);
      if (it == s_.attempts.end()) return;
      Attempt a = it->second;
      Job* owner = s_.FindJob(a.job);
      // Cancelling a task's only attempt restarts it, and a launched attempt
      // may already be running on its executor even before it says so.
      if (owner && owner->state == JobState::kRunning && owner->tasks[a.task].live == 1 &&
          !MayRunAgain(*owner, a.task, "restart", policy))
        return;
      // A restart: learn from it, before the drop (EndAttempt applies health changes).
      if (owner && owner->tasks[a.task].live == 1) life_.ObserveUnfinished(*owner, a);
      s_.Emit(CancelCmd{p.attempt, a.executor});
      life_.DropAttempt(p.attempt, AttemptOutcome::kCancelled, 0, std::string(policy) + ": " + p.reason);
      // Cancelling a task's only attempt is a restart (Mantri's kill and
      // restart): it relaunches now on the best free slot, instead of
      // queueing behind other jobs' tasks, which would make it finish later
      // than if it had been left alone. Its old executor (maybe the cause)
      // only when no other is free: then the slot it just freed.
      Job* job = s_.FindJob(a.job);
      if (job && job->state == JobState::kRunning && job->tasks[a.task].phase == TaskPhase::kWaiting) {
        if (ExecutorId e = place_.PickFree(*job, a.task, false, 0, a.executor))
          life_.Launch(*job, a.task, e, false, true);
      }
      return;
    }
    case Proposal::Kind::kQuarantine: {
      ExecutorState* e = s_.FindExec(p.executor);
      if (!e || e->quarantined) return;
      if (!place_.AllowsQuarantine(*e)) {
        TC_LOG(Debug) << policy << ": quarantine of executor " << e->id << " not applied: placement "
                      << place_.strategy().name() << " gives it only work it finishes in time (" << p.reason << ")";
        return;
      }
      if (s_.quarantined + 1 > QuarantineCap(s_.opt.max_quarantined_share, s_.executors.size())) return;
      TC_LOG(Info) << policy << ": quarantine executor " << e->id << " (" << e->desc.name << "): " << p.reason;
      Quarantine(*e, p.reason);
      return;
    }
    case Proposal::Kind::kRelease: {
      ExecutorState* e = s_.FindExec(p.executor);
      // Timed out: only registering again releases it; resting: its rest's end.
      if (!e || !e->quarantined || e->unresponsive || e->resting_until >= 0) return;
      TC_LOG(Info) << policy << ": release executor " << e->id << " (" << e->desc.name << "): " << p.reason;
      Release(*e, p.reason);
      return;
    }
    case Proposal::Kind::kWakeUp: {
      // NaN would break the heap's order; an ended attempt needs none.
      if (std::isnan(p.at) || !s_.attempts.count(p.attempt) || index >= s_.policies.size()) return;
      s_.wakeups.push({p.at, s_.wakeup_seq++, index, p.attempt});
      return;
    }
  }
}

}  // namespace tailcut::core
