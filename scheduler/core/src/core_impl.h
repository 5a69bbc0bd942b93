// SchedulerCore::Impl: the core's state and pieces behind the SchedulerCore
// facade. Its event handlers are defined in core.cpp; the attempt reports and
// "who may report what" in core_attempts.cpp; the delivery of policy events
// in core_policy_events.cpp. Private to the core: only those three files
// include it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cluster_view.h"
#include "core_state.h"
#include "feasibility.h"
#include "launch_specs.h"
#include "lifecycle.h"
#include "placement.h"
#include "policy_guard.h"
#include "proposal_gate.h"
#include "queries.h"
#include "restore.h"
#include "tailcut/core/scheduler_core.h"

namespace tailcut {

using namespace core;  // NOLINT: the core's own implementation (core*.cpp)

class SchedulerCore::Impl final {
 public:
  Impl(CoreOptions o, const Clock* clock, PolicyChain policies, std::unique_ptr<PredictorSuite> predictors)
      : s_(o, clock, std::move(policies), std::move(predictors)),
        view_(s_),
        place_(s_, view_),
        life_(s_, place_),
        gate_(s_, place_, life_) {}

  // ------------------------------------------------------------ events --
  StatusOr<JobId> SubmitJob(JobDef def);

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
  std::vector<PromoteCmd> PendingPromotions() const;
  StatusOr<JobStatusInfo> CancelJob(JobId id, std::string reason);
  ExecutorId AddExecutor(ExecutorDesc desc);
  void RemoveExecutor(ExecutorId id, bool lost, std::string reason);

  void ExecutorSeen(ExecutorId id) {
    if (ExecutorState* e = s_.FindExec(id)) s_.Heard(*e);
  }

  void SetLostAfter(double s) { s_.opt.lost_after_s = s; }
  void DiscountStall(double s) {
    if (!std::isfinite(s) || s <= 0) return;
    life_.PostponeDeadlines(s);
    // Executors coming back after a restart get the stall too (restore.cpp).
    if (s_.recovery_hold_until >= 0) s_.recovery_hold_until += s;
  }

  void ExecutorSignals(ExecutorId id, uint32_t gpu_throttle_reasons);

  // --- attempt reports (core_attempts.cpp)
  bool AcceptsReport(ExecutorId e, AttemptId id);
  void AttemptStarted(AttemptId id);
  void AttemptProgress(AttemptId id, float fraction);
  void AttemptSucceeded(AttemptId id, std::string output, double run_s);
  void NoteReportLag(const Attempt& a, double run_s, Time now);
  bool CommitOrphanResult(JobId j, TaskIndex t, AttemptId a, ExecutorId e, std::string output, double run_s);
  Status AdoptAttempt(AttemptId id, JobId j, TaskIndex t, ExecutorId eid, bool started);
  std::vector<AttemptId> RestoreLaunches(std::vector<JournaledLaunch> launches, AttemptId journaled_from);
  void AttemptFailed(AttemptId id, std::string error, double run_s);
  void AttemptDropped(AttemptId id, std::string why);

  void Tick() { RunDue(); }
  void TakeCommands(std::vector<Command>* out);
  double PolicyInterval() const;
  Time NextWakeUp() const;

  // ----------------------------------------------------------- queries --
  StatusOr<JobStatusInfo> Status_(JobId id) const { return core::JobStatusOf(s_, id); }
  StatusOr<std::vector<CommittedOutput>> Outputs(JobId id) const { return core::JobOutputsOf(s_, id); }
  std::vector<ExecutorStatusInfo> ExecutorList(ExecutorId after = 0, size_t limit = SIZE_MAX) const {
    return core::ExecutorList(s_, after, limit);
  }
  size_t ExecutorCount() const { return s_.executors.size(); }
  bool FixedShares(JobId id, std::vector<uint64_t>* counts, AttemptId* since) const {
    return core::FixedShares(s_, id, counts, since);
  }

  const TaskDef* TaskOf(JobId j, TaskIndex t) const { return core::TaskOf(s_, j, t); }
  Status TaskInputs(JobId j, TaskIndex t, std::vector<ResolvedInput>* out) {
    const Job* job = s_.FindJob(j);
    if (!job || t >= job->Count())
      return Status::NotFound("no task " + std::to_string(t) + " of job " + std::to_string(j));
    return core::ResolveInputs(s_, *job, t, out);
  }
  std::vector<JobId> ParentsOfUnfinished() const { return core::ParentsOfUnfinished(s_); }
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
  uint64_t AttemptsHandedTo(ExecutorId e) const {
    auto it = s_.executors.find(e);
    return it == s_.executors.end() ? 0 : it->second.handed;
  }
  size_t RunningJobs() const { return s_.running_jobs.size(); }
  uint64_t QueuedTasks() const { return s_.queued_tasks; }
  uint64_t WaitingTasks() const { return core::WaitingTasks(s_); }
  const CoreCounters& Counters() const { return s_.counters; }
  std::vector<OwnerShareInfo> OwnerShares() const {
    std::vector<OwnerShareInfo> out;
    for (const auto& [name, o] : s_.owner_book.owners())
      out.push_back({name, o.weight, o.max_slots, o.slots, o.jobs, o.entries > 0});
    return out;
  }
  std::vector<JobId> RunningJobIds() const { return {s_.running_jobs.begin(), s_.running_jobs.end()}; }
  const PredictorSuite* Predictors() const { return s_.predictors.get(); }
  std::vector<std::string> DisabledPolicies() const { return core::DisabledPolicies(s_); }
  void AddObserver(CoreObserver* o) { s_.observers.push_back(o); }
  const CoreOptions& options() const { return s_.opt; }

 private:
  bool DeliverPolicyEvents();

  // --- core_attempts.cpp
  void MarkStarted(Attempt& a);

  // --- who may report what (docs/SECURITY.md, "Results only for work handed out") ---
  void Refuse(ExecutorId e, AttemptId a, const char* why);
  Status HeldBy(AttemptId a, JobId j, TaskIndex t, ExecutorId eid);
  void Hold(const ExecutorState& e, const Attempt& a) { Hold(e.identity, a.id, a.job, a.task); }
  void Hold(std::shared_ptr<const std::string> identity, AttemptId a, JobId j, TaskIndex t);
  void Answered(ExecutorId id);
  void NoteTimeout(ExecutorId id);
  void NoteRefusal(ExecutorId id);
  bool EndRests(Time now);

  bool ExpireDeadlines(Time now);  // whether any ran out
  static std::string FormatLimit(double s);
  void CountLoss(Attempt a);
  void FailAttempt(Attempt a, std::string error, double run_s,  // a copy: EndAttempt erases it
                   AttemptOutcome outcome = AttemptOutcome::kFailed);
  void Commit(Job& job, TaskIndex t, AttemptId attempt, ExecutorId eid, std::string output, double run_s,
              bool copy = false);

  // --- core.cpp
  void RunDue();
  void RunOnTick();
  void RefreshIdlePolicies();
  bool RunJobTimers(Time now);  // whether any job ended
  void DropStaleTimers();
  bool PolicyTimerArmed() const;
  static bool CanStillComplete(const Job& job);
  void Pump();
  // Pump's jobs and owners that found no slot, kept between pumps so that
  // a pump that leaves work waiting (every one, on a full fleet) allocates
  // nothing; owners are marked by OwnerState::aside.
  std::vector<Job*> pump_aside_;
  std::vector<OwnerState*> pump_owners_aside_;
  // Copies looked at per pump for a first attempt without a slot.
  static constexpr uint32_t kPreemptScan = 4096;
  ExecutorId PreemptCopyFor(Job& job, TaskIndex t, uint32_t* budget);

  // DeliverPolicyEvents' buffers keep their capacity from call to call (a
  // fresh vector per call reallocated as each turn's events came: ~10% of
  // the allocations under `default`, issue 41), up to kKeptEvents. Not
  // re-entered: the gate applies proposals, it delivers no events.
  static constexpr size_t kKeptEvents = 1 << 16;
  std::vector<PolicyEvent> delivering_;
  std::vector<Proposal> proposals_;
  CoreState s_;
  StateView view_;
  Placement place_;
  Lifecycle life_;
  ProposalGate gate_;
};

}  // namespace tailcut
