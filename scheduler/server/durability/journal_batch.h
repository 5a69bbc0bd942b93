// One group commit as bytes (docs/RELIABILITY.md, "Replicas"): a
// JournalBatch records the journal writes of one loop turn, in order, and
// ApplyJournalBatch replays them into a journal on any replica, where a
// Commit makes them durable. The replicated log's entry is exactly this.
//
// Format (so replicas of any host agree): "TCJB", a version byte (2), then
// records, each a kind byte and its fields: integers as LEB128 varints, job
// and attempt ids as the zigzag difference from the id before them in the
// batch, an executor identity as its index in the batch's table (a new one
// followed by its bytes), strings as a varint length and the bytes, doubles
// as 8 bytes little-endian; pruned jobs ('X') as a count of ranges, each
// its first id as the difference from the last id of the range before and
// its length less one. A no-op task's launch, end and commit take
// about 25 bytes (version 1, fixed-width, still read: about 110). A
// malformed batch, or one with a record kind this build does not know (a
// newer replica's), is refused whole, before any write. A new record kind
// keeps the version byte: every build reads older batches, and replicas
// are upgraded together (docs/RELIABILITY.md, "Versions").
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

#include "tailcut/common/status.h"
#include "tailcut/server/journal.h"

namespace tailcut {

class JournalBatch final : public JournalWriter {
 public:
  JournalBatch() { Clear(); }

  void JobAccepted(JobId id, const std::string& request_key, const std::string& spec, double submitted_unix) override;
  void TaskCommitted(JobId job, TaskIndex task, AttemptId attempt, ExecutorId executor, double run_s,
                     const std::string* output) override;
  void JobFinished(JobId id, JobState state, const std::string& reason, double finished_unix, uint32_t attempts,
                   uint32_t copies, uint32_t failed_attempts) override;
  void SharesFixed(JobId id, const std::vector<uint64_t>& counts, AttemptId since) override;
  void PromotionPending(JobId job, TaskIndex task, AttemptId attempt, const std::string& host) override;
  void OutputPromoted(JobId job, TaskIndex task) override;
  void AttemptLaunched(AttemptId attempt, JobId job, TaskIndex task, const std::string& identity) override;
  void AttemptEnded(AttemptId attempt) override;
  void RunStarted(uint32_t epoch) override;
  void JobsPruned(const std::vector<JobRange>& ranges) override;
  bool dirty() const override { return records_ > 0; }

  bool empty() const { return records_ == 0; }
  size_t records() const { return records_; }
  const std::string& bytes() const { return bytes_; }
  // The batch so far; the batch starts over empty.
  std::string Take();
  void Clear();

 private:
  void Job(JobId id);
  void Attempt(AttemptId id);
  std::string bytes_;
  size_t records_ = 0;
  JobId last_job_ = 0;
  AttemptId last_attempt_ = 0;
  std::unordered_map<std::string, uint64_t> identities_;  // identity -> its index in this batch
};

// Replays `batch` into `to` (buffered there until its Commit). Refuses a
// malformed batch (InvalidArgument) without writing any of it.
Status ApplyJournalBatch(std::string_view batch, JournalWriter* to);

}  // namespace tailcut
