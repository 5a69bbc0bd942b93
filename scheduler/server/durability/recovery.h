// The scheduler's durability, on the live driver's side: journaling what the
// core commits and finishes, and replaying the journal into a fresh core on
// start (docs/RELIABILITY.md). The core itself knows nothing of files.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "journal_sink.h"
#include "tailcut.pb.h"
#include "tailcut/common/clock.h"
#include "tailcut/common/log_limiter.h"
#include "tailcut/core/scheduler_core.h"
#include "tailcut/server/journal.h"

namespace tailcut {

// Client request keys (owner + "\n" + JobSpec.request_key) for idempotent
// submits, each bound to a digest of the job body it made: the same body
// again is a retry and gets that job, another body under the key is
// refused. A running job's key is never evicted; a finished job's key stays
// at least keep_finished_s after it finished (a client's retries end long
// before), and beyond that only while there are at most `capacity` keys
// (docs/RELIABILITY.md, "Request keys").
class RequestKeys {
 public:
  static constexpr double kKeepFinishedS = 3600;
  explicit RequestKeys(size_t capacity, double keep_finished_s = kKeepFinishedS)
      : capacity_(capacity), keep_finished_s_(keep_finished_s) {}
  // The digest a key is bound to: of the job spec as journaled (owner set).
  static uint64_t Digest(std::string_view spec_bytes);
  enum class Match { kNew, kRetry, kConflict };
  // kRetry and kConflict set *job to the job the key made.
  Match Find(const std::string& key, uint64_t digest, JobId* job) const;
  void Add(const std::string& key, uint64_t digest, JobId job);
  // `job` finished at `now` (the core's clock): its key may be evicted
  // from now + keep_finished_s on.
  void Finished(JobId job, double now);
  size_t size() const { return keys_.size(); }

 private:
  struct Entry {
    JobId job = 0;
    uint64_t digest = 0;
  };
  size_t capacity_;
  double keep_finished_s_;
  std::unordered_map<std::string, Entry> keys_;
  std::unordered_map<JobId, std::string> running_;       // job -> its key, while it runs
  std::deque<std::pair<double, std::string>> finished_;  // (finish time, key), oldest first
};

struct RecoveryStats {
  uint32_t epoch = 0;
  size_t resumed = 0;   // unfinished jobs that run on
  size_t finished = 0;  // finished jobs kept for queries
  size_t commits = 0;   // committed tasks kept (not rerun)
  size_t launches = 0;  // an earlier run's attempts that only their identity may adopt
};

// Starts a new run through `sink` (a new epoch), replays every job into
// `core` (whose clock says "now"), and reserves ids so that none is reused:
// job ids continue after the largest journaled one; attempt ids start at
// epoch << 40; the journaled launches say which identity may adopt each of
// an earlier run's attempts (SchedulerCore::RestoreLaunches), and `sink`
// keeps their rows until their jobs finish. `parse` turns a journaled spec
// back into a JobDef.
using SpecParser = StatusOr<JobDef> (*)(const std::string& spec);
StatusOr<RecoveryStats> Recover(Journal& journal, SchedulerCore& core, const Clock& clock, SpecParser parse,
                                RequestKeys* keys, JournalSink* sink);

// The live driver's durability in one place: the journal and what feeds it,
// the request keys of idempotent submits, and the client replies held back
// until the group commit that makes what they tell durable.
class Durability {
 public:
  explicit Durability(size_t key_capacity) : keys_(key_capacity) {}
  // Opens state_dir/journal.db and recovers into `core`; "" = in memory
  // (nothing journaled, nothing held).
  Status Open(const std::string& state_dir, bool sync_full, SchedulerCore& core, const Clock& clock, SpecParser parse,
              uint32_t retention);
  // A replicated leader's takeover (docs/RELIABILITY.md, "Replicas"):
  // recovers into `core` (fresh) from `copy`, a copy of the replica's
  // journal (its StartRun picks the run's epoch; nothing else is written to
  // it), and from now on journals into `batch`, which the leader proposes
  // as its group commits, the run's epoch (RunStarted) first, with the
  // finished jobs beyond `retention` that Open would prune (JobsPruned:
  // every replica deletes them at that entry). Nothing is held here: the
  // leader holds replies until its entry commits.
  StatusOr<RecoveryStats> Takeover(Journal& copy, JournalWriter* batch, SchedulerCore& core, const Clock& clock,
                                   SpecParser parse, uint32_t retention);
  bool journaled() const { return sink_ != nullptr; }
  RequestKeys& keys() { return keys_; }
  // An accepted job: its request key, and (journaled) its spec.
  void JobAccepted(JobId id, const std::string& key, const std::string& spec);
  // Commits before the turn's Work goes out when the sink says a launch,
  // shares or a promotion journaled this turn must be durable first
  // (JournalSink::must_commit_before_send). A commit that fails is logged
  // and the Work goes out anyway: what it held stays buffered for the next
  // commit, and a restart without it refuses the attempts (docs/JOBS.md).
  void BeforeWorkGoesOut() {
    if (journal_ && sink_->must_commit_before_send()) (void)CommitJournal();
  }
  // Called after each journal transaction with its duration (seconds) and
  // whether it was written: the metrics' journal lag (docs/METRICS.md).
  std::function<void(double seconds, bool ok)> on_commit;
  // True when `reply` must wait for the next group commit; it is kept.
  bool Hold(const std::string& route, const wire::ClientReply& reply);
  // Replies wait for the next group commit.
  bool holding() const { return !held_.empty(); }
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
  std::unique_ptr<JournalSink> sink_;  // every write to journal_ goes through it
  RequestKeys keys_;
  std::vector<std::pair<std::string, wire::ClientReply>> held_;
  double last_commit_ = 0;
  LogLimiter commit_errors_;
};

}  // namespace tailcut
