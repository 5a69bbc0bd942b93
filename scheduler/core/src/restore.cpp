#include "restore.h"

#include <algorithm>
#include <string>

#include "feasibility.h"
#include "tailcut/common/log.h"

namespace tailcut::core {

void ReserveIds(CoreState& s, JobId next_job, AttemptId next_attempt, AttemptId earlier_from) {
  s.next_job_id = std::max(s.next_job_id, next_job);
  s.next_attempt_id = std::max(s.next_attempt_id, next_attempt);
  s.run_attempt_base = std::max(s.run_attempt_base, next_attempt);
  s.earlier_runs_from = std::max<AttemptId>(earlier_from, 1);  // 0 is no attempt
}

AttemptId SharesSince(const CoreState& s, JobId id) {
  AttemptId since = s.shares.RestoredSince(id);
  return since ? since : s.run_attempt_base;
}

bool FixedShares(const CoreState& s, JobId id, std::vector<uint64_t>* counts, AttemptId* since) {
  *counts = s.shares.Counts(id);
  *since = SharesSince(s, id);
  return !counts->empty();
}

bool UnknownShare(const CoreState& s, const Job& job, AttemptId a) {
  return job.def.divisible_units > 0 && a < SharesSince(s, job.id);
}

namespace {

// Promotions a restored job still waits for (output_dir): only of tasks it committed.
void RestorePromotions(Lifecycle& life, Job& job, std::vector<PendingPromotion> promotions) {
  if (job.def.output_dir.empty()) return;
  for (PendingPromotion& p : promotions) {
    bool committed = job.state != JobState::kRunning ||
                     (p.task < job.tasks.size() && job.tasks[p.task].phase == TaskPhase::kCommitted);
    if (p.task < job.Count() && committed) life.AwaitPromotion(job, p.task, p.attempt, 0, std::move(p.host));
  }
}

}  // namespace

Status RestoreJob(CoreState& s, Lifecycle& life, JobId id, JobDef def, Time submitted,
                  std::vector<CommittedOutput> commits, const std::vector<uint64_t>& share_counts,
                  AttemptId shares_since, std::vector<PendingPromotion> promotions) {
  if (id == 0 || s.jobs.count(id)) return Status::InvalidArgument("job " + std::to_string(id) + " already exists");
  if (def.TaskCount() == 0) return Status::InvalidArgument("job " + std::to_string(id) + " has no tasks");
  SortLabels(def);
  Job& job = life.AddJob(std::move(def), id);
  job.submitted = submitted;
  s.shares.Add(id, job.def);
  // Without its journaled shares (lost, or not fitting) the committed
  // tasks' shares are unknown, so the rest could not be sized to sum to
  // the total. Resubmit the round.
  if (job.def.divisible_units > 0 && !share_counts.empty() && !s.shares.Restore(id, share_counts, shares_since))
    TC_LOG(Warn) << "journal: job " << id << "'s shares do not fit it; they are sized again";
  if (job.def.divisible_units > 0 && !commits.empty() && !s.shares.Restored(id)) {
    life.FinishJob(job, JobState::kFailed,
                   "divisible job restored with committed tasks but without its speed shares; resubmit it");
    return Status::Ok();
  }
  for (CommittedOutput& c : commits) {
    if (c.task >= job.Count() || job.tasks[c.task].phase == TaskPhase::kCommitted) continue;  // journaled once
    life.RecordCommit(job, c.task, c.attempt, c.executor, c.run_s, std::move(c.output), /*notify=*/false);
    job.attempts++;  // the journal keeps commits, not attempts: at least the one that committed
  }
  RestorePromotions(life, job, std::move(promotions));
  // A crash between its last commit (or promotion) and its final status: finish it now.
  if (job.Complete()) {
    life.FinishJob(job, JobState::kSucceeded, "");
  } else if (s.opt.lost_after_s > 0) {
    // An attempt launched before the crash may still run on an executor
    // that has not registered again yet (the journaled launch says which
    // identity: RestoreLaunches). Relaunching a task that is not idempotent
    // now would run its side effect twice; its executor registers within
    // lost_after_s (else it is lost anyway) and the attempt is adopted. The
    // pump holds only such tasks (whether a kernel is idempotent is known
    // once executors offering it have registered).
    job.recovery_hold = true;
    s.recovery_hold_until = std::max(s.recovery_hold_until, s.Now() + s.opt.lost_after_s);
  }
  s.dirty = true;
  return Status::Ok();
}

Status RestoreFinishedJob(CoreState& s, Lifecycle& life, JobId id, JobDef def, const JobStatusInfo& st,
                          std::vector<CommittedOutput> outputs, std::vector<PendingPromotion> promotions) {
  if (id == 0 || s.jobs.count(id)) return Status::InvalidArgument("job " + std::to_string(id) + " already exists");
  if (st.state == JobState::kRunning) return Status::InvalidArgument("job " + std::to_string(id) + " is not finished");
  s.next_job_id = std::max(s.next_job_id, id + 1);
  Job& job = s.jobs[id];
  job.id = id;
  job.def = std::move(def);
  job.state = st.state;
  job.reason = st.reason;
  job.submitted = st.submitted;
  job.finished = st.finished;
  job.committed = st.committed;
  job.attempts = st.attempts;
  job.copies = st.copies;
  job.copies_refused = st.copies_refused_side_effects;
  job.copies_preempted = st.copies_preempted;
  job.failed_attempts = st.failed_attempts;
  if (job.def.return_outputs) job.outputs = std::move(outputs);
  RestorePromotions(life, job, std::move(promotions));
  // Not trimmed to job_retention yet: the children restored after it pin
  // the parents whose outputs they take (dependencies.h), and the next job
  // to finish trims the rest. The journal holds no more than it kept.
  s.finished_order.push_back(id);
  return Status::Ok();
}

}  // namespace tailcut::core
