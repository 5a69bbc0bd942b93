// The scheduler's durability, on the live driver's side: journaling what the
// core commits and finishes, and replaying the journal into a fresh core on
// start (docs/RELIABILITY.md). The core itself knows nothing of files.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include <unordered_map>

#include "tailcut.pb.h"
#include "tailcut/common/clock.h"
#include "tailcut/core/scheduler_core.h"
#include "tailcut/server/journal.h"

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

// The live driver's durability in one place: the journal and what feeds it,
// the request keys of idempotent submits, and the client replies held back
// until the group commit that makes what they tell durable.
class Durability {
 public:
  explicit Durability(size_t key_capacity) : keys_(key_capacity) {}
  // Opens state_dir/journal.db and recovers into `core`; "" = in memory
  // (nothing journaled, nothing held).
  Status Open(const std::string& state_dir, bool sync_full, SchedulerCore& core, const Clock& clock,
              SpecParser parse, uint32_t retention);
  bool journaled() const { return journal_ != nullptr; }
  RequestKeys& keys() { return keys_; }
  void JobAccepted(JobId id, const std::string& key, const std::string& spec);
  // A divisible job's shares, fixed at its first launches by this run's
  // attempts (ids from `since`): buffered; the server calls CommitNow before
  // those launches go out, so that a restarted scheduler knows what its
  // executors run. A commit that fails is logged and the launches go out
  // anyway: the shares stay buffered for the next commit, and a restart
  // without them refuses the attempts (docs/JOBS.md).
  void SharesFixed(JobId id, const std::vector<uint64_t>& counts, AttemptId since);
  // Output promotions (PromoteCmd): pending ones are resent after a restart.
  void PromotionPending(JobId job, TaskIndex task, AttemptId attempt, const std::string& host) {
    if (journal_) journal_->PromotionPending(job, task, attempt, host);
  }
  void OutputPromoted(JobId job, TaskIndex task) {
    if (journal_) journal_->OutputPromoted(job, task);
  }
  void CommitNow() {
    if (journal_) (void)CommitJournal();
  }
  // True when `reply` must wait for the next group commit; it is kept.
  bool Hold(const std::string& route, const wire::ClientReply& reply);
  // Group commit. When a client message waits on it (a submit reply, a
  // streamed result, a final status), what the loop turn journaled becomes
  // durable at once and `send` gets the held messages. Otherwise (task
  // commits nobody is told about yet) writes are batched for up to
  // kBackgroundCommitS: a commit lost in a crash is only a task run again.
  // `force`: commit now (shutdown).
  template <typename Send>
  void Commit(double now, bool force, const Send& send) {
    if (!journal_) return;
    if (!force && held_.empty() && now - last_commit_ < kBackgroundCommitS) return;
    last_commit_ = now;
    if (!CommitJournal()) return;  // nothing is acknowledged that is not durable
    for (auto& [route, reply] : held_) send(route, reply);
    held_.clear();
  }

 private:
  static constexpr double kBackgroundCommitS = 0.05;
  bool CommitJournal();  // false (logged) when the journal cannot be written
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<JournalWriter> writer_;
  RequestKeys keys_;
  std::vector<std::pair<std::string, wire::ClientReply>> held_;
  double last_commit_ = 0;
};

}  // namespace tailcut
