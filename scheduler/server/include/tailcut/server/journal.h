// The scheduler's durable record (docs/RELIABILITY.md): every accepted job,
// every commit and every final status, made durable before any client hears
// of them, so that a scheduler killed at any moment loses no accepted work.
//
// It also keeps which executor identity each unfinished attempt went to
// (AttemptLaunched), so that after a restart only that identity adopts it.
//
// SQLite in WAL mode at `path`. Writes are buffered and made durable
// together by Commit() — one transaction (one fsync) per batch: group
// commit, so that durability does not cost dispatch throughput. The live
// driver commits once per loop turn, then sends the replies it held back.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tailcut/common/ids.h"
#include "tailcut/common/status.h"
#include "tailcut/core/types.h"

namespace tailcut {

struct JournalOptions {
  std::string path;        // the SQLite file (its -wal beside it); one
                           // scheduler at a time (exclusive lock)
  bool sync_full = false;  // fsync every commit (survives power loss); false:
                           // survives a killed scheduler, not a crashed OS
};

struct JournaledJob {
  JobId id = 0;
  std::string request_key;  // the client's idempotency key ("" = none)
  std::string spec;         // the accepted JobSpec, serialized (wire format)
  double submitted_unix = 0;
  bool finished = false;
  JobState state = JobState::kRunning;
  std::string reason;
  double finished_unix = 0;
  uint32_t attempts = 0, copies = 0, failed_attempts = 0;  // at finish
  // In commit order. For jobs with return_outputs every field is kept; for
  // the others only `task` (attempt and executor read back as 0, run_s as
  // the batch's mean).
  std::vector<CommittedOutput> commits;
  // A divisible job's units per task, once its shares were fixed (empty
  // before); begins are their running sums. Attempts from `shares_since`
  // on ran them; older ones ran shares a crashed run fixed and lost.
  std::vector<uint64_t> share_counts;
  AttemptId shares_since = 0;
  // Committed tasks whose output directory was not promoted yet (output_dir).
  std::vector<PendingPromotion> promotions;
};

// The journal's writes, buffered until a commit: the Journal itself, or a
// JournalBatch (durability/journal_batch.h) that packs one group commit into
// bytes, a replicated log's entry (docs/RELIABILITY.md, "Replicas").
// Job ids first..last, both included.
struct JobRange {
  JobId first = 0, last = 0;
  bool operator==(const JobRange&) const = default;
};

class JournalWriter {
 public:
  virtual ~JournalWriter() = default;
  virtual void JobAccepted(JobId id, const std::string& request_key, const std::string& spec,
                           double submitted_unix) = 0;
  virtual void TaskCommitted(JobId job, TaskIndex task, AttemptId attempt, ExecutorId executor, double run_s,
                             const std::string* output) = 0;
  virtual void JobFinished(JobId id, JobState state, const std::string& reason, double finished_unix, uint32_t attempts,
                           uint32_t copies, uint32_t failed_attempts) = 0;
  virtual void SharesFixed(JobId id, const std::vector<uint64_t>& counts, AttemptId since) = 0;
  virtual void PromotionPending(JobId job, TaskIndex task, AttemptId attempt, const std::string& host) = 0;
  virtual void OutputPromoted(JobId job, TaskIndex task) = 0;
  virtual void AttemptLaunched(AttemptId attempt, JobId job, TaskIndex task, const std::string& identity) = 0;
  virtual void AttemptEnded(AttemptId attempt) = 0;
  // A replicated leader's run (docs/RELIABILITY.md, "Replicas"): its epoch,
  // journaled with its first group commit; the journal's epoch becomes at
  // least this (a single scheduler's StartRun writes it at once instead).
  virtual void RunStarted(uint32_t epoch) = 0;
  // Finished jobs leave the journal (core.job_retention): every job with an
  // id in one of `ranges` (ascending, disjoint), with its commits, shares
  // and promotions. Named by id, not by a count, so that every replica
  // deletes the same rows however its entries are grouped into commits.
  virtual void JobsPruned(const std::vector<JobRange>& ranges) = 0;
  virtual bool dirty() const = 0;  // something buffered since the last commit
};

class Journal final : public JournalWriter {
 public:
  static StatusOr<std::unique_ptr<Journal>> Open(const JournalOptions& options);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Starts a scheduler run: the run's epoch (1, 2, ...), already durable.
  StatusOr<uint32_t> StartRun();
  // Every job, oldest first, with its commits.
  Status Load(std::vector<JournaledJob>* jobs);

  // Buffered until Commit().
  void JobAccepted(JobId id, const std::string& request_key, const std::string& spec, double submitted_unix) override;
  // With `output` (jobs with return_outputs) attempt, executor, run time and
  // output are kept; with null only that the task committed (and its mean
  // run time), packed as ranges of consecutive tasks.
  void TaskCommitted(JobId job, TaskIndex task, AttemptId attempt, ExecutorId executor, double run_s,
                     const std::string* output) override;
  void JobFinished(JobId id, JobState state, const std::string& reason, double finished_unix, uint32_t attempts,
                   uint32_t copies, uint32_t failed_attempts) override;
  // A divisible job's shares, fixed at its first launches (docs/JOBS.md)
  // by the run whose attempt ids start at `since`.
  void SharesFixed(JobId id, const std::vector<uint64_t>& counts, AttemptId since) override;
  // A job with output_dir: task's committed attempt (run on `host`) is to be
  // promoted (PromoteCmd); OutputPromoted: it was, or cannot be.
  void PromotionPending(JobId job, TaskIndex task, AttemptId attempt, const std::string& host) override;
  void OutputPromoted(JobId job, TaskIndex task) override;
  // Attempt `attempt` of (job, task) went to an executor of `identity`;
  // AttemptEnded: its row is no longer needed (an attempt launched and
  // ended before the next Commit is never written).
  void AttemptLaunched(AttemptId attempt, JobId job, TaskIndex task, const std::string& identity) override;
  void AttemptEnded(AttemptId attempt) override;
  void RunStarted(uint32_t epoch) override;
  // Deleted in the commit, after its other writes.
  void JobsPruned(const std::vector<JobRange>& ranges) override;
  // The launches journaled and not ended yet, oldest first, and the first
  // run (epoch) that journaled launches (0: none did yet).
  Status LoadLaunches(std::vector<JournaledLaunch>* launches, uint32_t* since_epoch);
  bool dirty() const override;
  // Makes everything buffered durable, in one transaction.
  Status Commit();
  // Deletes the oldest finished jobs beyond the newest `keep` finished ones,
  // except those in `parents` (unfinished jobs run after them, and recovery
  // links them again: SchedulerCore::ParentsOfUnfinished), in a commit of
  // their own (with anything still buffered).
  Status Prune(uint32_t keep, const std::vector<JobId>& parents = {});
  // The jobs Prune(keep, parents) deletes, as runs of ids (a replicated
  // leader journals them with JobsPruned at its takeover).
  StatusOr<std::vector<JobRange>> Prunable(uint32_t keep, const std::vector<JobId>& parents = {});
  // A consistent copy of the whole journal, committed writes only, as a
  // fresh SQLite file at `path` (VACUUM INTO; it must not exist): a
  // replica's snapshot.
  Status CopyTo(const std::string& path);

 private:
  class Impl;
  explicit Journal(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tailcut
