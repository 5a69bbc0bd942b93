// One group commit as bytes (docs/RELIABILITY.md, "Replicas"): a
// JournalBatch records the journal writes of one loop turn, in order, and
// ApplyJournalBatch replays them into a journal on any replica, where a
// Commit makes them durable. The replicated log's entry is exactly this.
//
// Format (little-endian, so replicas of any host agree): "TCJB", version
// byte 1, then records, each a kind byte and its fields; strings are a u32
// length and the bytes. A malformed batch is refused whole, before any write.
#pragma once

#include <string>
#include <string_view>

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
  bool dirty() const override { return records_ > 0; }

  bool empty() const { return records_ == 0; }
  size_t records() const { return records_; }
  const std::string& bytes() const { return bytes_; }
  // The batch so far; the batch starts over empty.
  std::string Take();
  void Clear();

 private:
  std::string bytes_;
  size_t records_ = 0;
};

// Replays `batch` into `to` (buffered there until its Commit). Refuses a
// malformed batch (InvalidArgument) without writing any of it.
Status ApplyJournalBatch(std::string_view batch, JournalWriter* to);

}  // namespace tailcut
