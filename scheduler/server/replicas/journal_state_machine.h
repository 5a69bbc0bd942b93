// A replica's state machine (replica_group.h): its own SQLite journal
// (tailcut/server/journal.h). A committed entry is one group commit
// (durability/journal_batch.h), replayed into the journal's buffer; the
// buffer is committed in one transaction for all the entries applied since
// the last (Flush: every few milliseconds, before a snapshot or a copy, and
// when the machine closes), so a launch that ends a few entries later is
// never written, as in a single scheduler's group commit. Entries need not
// reach the journal file one by one: it is durable in Raft's log, and a
// replica restarted on its disk rebuilds its journal from Raft's snapshot
// and log. A snapshot is the journal file itself, copied consistently
// (VACUUM INTO); restoring one replaces the file. Used on the replica
// thread only while the group runs.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "replica_group.h"
#include "tailcut/server/journal.h"

namespace tailcut {

class JournalStateMachine final : public ReplicaStateMachine {
 public:
  static StatusOr<std::unique_ptr<JournalStateMachine>> Open(const JournalOptions& options);

  ~JournalStateMachine() override;
  Status Apply(std::string_view entry) override;
  Status Flush() override;
  Status Snapshot(std::string* out) override;
  Status Restore(std::string_view snapshot) override;

  // A consistent copy of the journal at `path` (replaced if there), from
  // any thread while the group runs: a new leader reads it (Recover).
  Status CopyTo(const std::string& path);
  // The journal (null after a failed Restore); the group must be stopped,
  // or the caller on the replica thread.
  Journal* journal() { return journal_.get(); }
  uint64_t applied() const { return applied_; }  // entries applied since Open

 private:
  explicit JournalStateMachine(const JournalOptions& o) : options_(o) {}
  Status FlushLocked();
  // Applied entries beyond this many are committed at once (the buffer's bound).
  static constexpr uint64_t kMaxUnflushed = 256;
  JournalOptions options_;
  uint64_t unflushed_ = 0;  // entries applied to the buffer, not committed yet
  std::mutex mu_;  // journal_: the replica thread's, and CopyTo's
  std::unique_ptr<Journal> journal_;
  std::atomic<uint64_t> applied_{0};
};

}  // namespace tailcut
