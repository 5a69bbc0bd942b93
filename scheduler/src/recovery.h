// The scheduler's durability, on the live driver's side: journaling what the
// core commits and finishes, and replaying the journal into a fresh core on
// start (docs/RELIABILITY.md). The core itself knows nothing of files.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>

#include "tailcut/common/clock.h"
#include "tailcut/scheduler/core.h"
#include "tailcut/scheduler/journal.h"

namespace tailcut {

// Seconds since the Unix epoch: journaled times survive a restart, the
// core's clock (origin at process start) does not.
double UnixNow();

// Journals every commit and final status the core reports.
class JournalWriter final : public CoreObserver {
 public:
  explicit JournalWriter(Journal* journal) : journal_(journal) {}
  void OnTaskCommitted(JobId job, TaskIndex task, AttemptId attempt, ExecutorId executor, double run_s,
                       const std::string* output) override;
  void OnJobFinished(const JobStatusInfo& info) override;

 private:
  Journal* journal_;
};

// Client request keys of the jobs the scheduler still knows, for
// idempotent submits; bounded like the core's finished-job retention.
class RequestKeys {
 public:
  explicit RequestKeys(size_t capacity) : capacity_(capacity) {}
  JobId Find(const std::string& key) const;
  void Add(const std::string& key, JobId job);

 private:
  size_t capacity_;
  std::unordered_map<std::string, JobId> jobs_;
  std::deque<std::string> order_;
};

struct RecoveryStats {
  uint32_t epoch = 0;
  size_t resumed = 0;    // unfinished jobs that run on
  size_t finished = 0;   // finished jobs kept for queries
  size_t commits = 0;    // committed tasks kept (not rerun)
};

// Starts a new run on `journal` (a new epoch), replays every job into
// `core` (whose clock says "now"), and reserves ids so that none is reused:
// job ids continue after the largest journaled one; attempt ids start at
// epoch << 40. `parse` turns a journaled spec back into a JobDef.
using SpecParser = StatusOr<JobDef> (*)(const std::string& spec);
StatusOr<RecoveryStats> Recover(Journal& journal, SchedulerCore& core, const Clock& clock, SpecParser parse,
                                RequestKeys* keys);

}  // namespace tailcut
