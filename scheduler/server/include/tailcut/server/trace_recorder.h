// Records the scheduler's own runs as an attempt trace (docs/TRACE_FORMAT.md)
// for `tailcut whatif` and `tailcut predict-eval`: one CSV row per committed
// attempt, appended as attempts end. The file is bounded: when the next row
// would take it past max_bytes it is renamed to PATH.1 (replacing the older
// one) and a fresh PATH begins, so at most about 2 x max_bytes are on disk.
// Used by the daemon ([scheduler] trace_path, docs/CONFIG.md) and by
// `tailcut bench --trace`. RecentTrace keeps the newest rows in memory
// instead, for `tailcut trace JOB`.
//
// Thread safety: a TraceRecorder may be called from any thread (the
// server's loop writes rows, the live bench's threads comments); a
// RecentTrace belongs to the loop that observes the core.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tailcut/common/status.h"
#include "tailcut/common/thread_annotations.h"
#include "tailcut/core/types.h"
#include "tailcut/predictors/trace.h"

namespace tailcut {

struct TraceRecorderOptions {
  std::string path;
  uint64_t max_bytes = 64ull << 20;  // per file; >= 4096
};

// The trace row of a committed attempt; nullopt for any other outcome.
// end = when the scheduler saw the result (scheduler clock), start = end -
// the executor-measured run time (else when the scheduler heard it start). Commas and line breaks in the class name
// become '_' (the format has no quoting).
std::optional<TraceRow> TraceRowOf(const AttemptRecord& record);

class TraceRecorder final : public CoreObserver {
 public:
  // Opens (appends to) the file; writes the header if it is new or empty.
  static StatusOr<std::unique_ptr<TraceRecorder>> Open(TraceRecorderOptions options);
  ~TraceRecorder() override;

  void OnAttemptEnded(const AttemptRecord& record) override;
  // "# not copied: job J task T WHAT: WHY" (docs/POLICIES.md, "Side effects").
  void OnCopyRefused(JobId job, TaskIndex task, std::string_view what, std::string_view why) override;
  // A "# text" line (the format skips them): who the executor ids are, etc.
  // Line breaks in `text` become spaces.
  void Comment(const std::string& text);

  uint64_t rows() const;         // rows written since Open
  uint64_t rotations() const;    // times the file was rotated
  Status status() const;         // the first write error; rows after it are dropped
  void Flush();

 private:
  explicit TraceRecorder(TraceRecorderOptions options) : options_(std::move(options)) {}
  Status OpenFile() TC_REQUIRES(mu_);
  void WriteLine(const std::string& line) TC_REQUIRES(mu_);  // rotates first when full
  void Fail(Status s) TC_REQUIRES(mu_);                      // log once, stop recording
  mutable Mutex mu_;
  TraceRecorderOptions options_;
  std::FILE* file_ TC_GUARDED_BY(mu_) = nullptr;
  uint64_t bytes_ TC_GUARDED_BY(mu_) = 0;
  uint64_t rows_ TC_GUARDED_BY(mu_) = 0;
  uint64_t rotations_ TC_GUARDED_BY(mu_) = 0;
  Status error_ TC_GUARDED_BY(mu_);
};

// The last `capacity` trace rows (all jobs), in memory, for `tailcut trace
// JOB` ([scheduler] trace_memory_rows): a ring, so memory stays fixed
// however long the scheduler runs. Rows of a job that ran long ago are
// overwritten; a caller tells by comparing the rows it gets with the job's
// committed task count (one committed attempt per committed task). Each
// job's rows are chained, so RowsOf costs the job's rows, not the ring's.
class RecentTrace final : public CoreObserver {
 public:
  explicit RecentTrace(size_t capacity) : capacity_(capacity) {}
  void OnAttemptEnded(const AttemptRecord& record) override;
  // The held rows of `job`, oldest first.
  std::vector<TraceRow> RowsOf(JobId job) const;
  size_t capacity() const { return capacity_; }
  size_t size() const { return slots_.size(); }
  size_t jobs() const { return chains_.size(); }  // jobs with rows held

 private:
  static constexpr size_t kNone = SIZE_MAX;
  struct Slot {
    TraceRow row;
    size_t next = kNone;  // the job's next newer row
  };
  struct Chain {
    size_t oldest = kNone, newest = kNone;
  };
  size_t capacity_;
  size_t next_ = 0;  // the slot the next row takes once the ring is full
  std::vector<Slot> slots_;
  std::unordered_map<JobId, Chain> chains_;
  Chain* last_chain_ = nullptr;  // chains_[last_chain_job_], while it is there
  JobId last_chain_job_ = 0;
};

}  // namespace tailcut
