// Replicas (docs/RELIABILITY.md, "Replicas"): three or five scheduler
// daemons keep one replicated log of group commits through libraft, with
// its libuv disk back end and our keyed TCP transport (keyed_transport.h).
//
// The leader proposes each group commit (one loop turn's journal writes,
// durability/journal_batch.h) as one Raft entry; it hears it committed only
// once a quorum has it on disk. Every replica applies committed entries, in
// log order, to its state machine (journal_state_machine.h: its own SQLite
// journal); a snapshot is that journal file.
//
// libraft runs its own libuv loop on a thread of the group's. The caller's
// loop never blocks on it: Propose hands an entry across a bounded queue,
// and results and role changes come back through Poll, with `wake` called
// (on the replica thread) whenever there is something to poll.
//
// Fencing: a proposal carries the term in which the caller saw this replica
// lead; the replica thread hands it to Raft only if it still leads in that
// term, else it fails. libraft's leader steps down when it has not heard
// from a quorum for an election timeout, and a deposed leader's entries
// never commit (the followers have seen a higher term).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tailcut/common/status.h"

namespace tailcut {

struct ReplicaPeer {
  uint64_t id = 0;      // 1, 2, ...: unique in the group, never reused for another machine
  std::string address;  // "ip:port" (or "[ipv6]:port") its replica port listens on
};

struct ReplicaOptions {
  uint64_t id = 0;                       // this replica: one of `peers`
  std::vector<ReplicaPeer> peers;        // every voter, this one included (3 or 5)
  std::string dir;                       // libraft's log and snapshots (created); e.g. state_dir/raft
  std::string key;                       // the replica key: 32 raw bytes, the same on every replica
  std::string bind_address;              // listen here instead of this replica's own address ("" = that)
  unsigned election_timeout_ms = 1000;   // libraft's default; a leader steps down after as long without a quorum
  unsigned heartbeat_timeout_ms = 100;   // libraft's default
  unsigned snapshot_threshold = 1024;    // entries between snapshots (each copies the journal)
  unsigned snapshot_trailing = 128;      // entries kept behind a snapshot, for lagging followers
  unsigned handshake_timeout_ms = 3000;  // a replica connection's challenge-response
  unsigned max_handshakes = 32;          // unfinished incoming ones at once; more are closed
  size_t max_in_flight = 64;             // proposals without a result yet; more are refused (back-pressure)
  size_t max_entry_bytes = 64u << 20;    // a larger proposal is refused
  // What another replica may send (docs/RELIABILITY.md, "The key is the
  // trust boundary"); a larger message is logged and its connection closed.
  // Entries in one append; 0: 64 x (snapshot_threshold + snapshot_trailing),
  // libraft sending at most the entries its log keeps between snapshots.
  size_t max_append_entries = 0;
  size_t max_append_bytes = 256u << 20;             // an append's entries together
  uint64_t max_snapshot_bytes = uint64_t{1} << 30;  // a snapshot: the leader's journal file
  uint64_t term_jump_to_log = 64;                   // a message this far ahead of our term is logged
  std::function<void()> wake;            // something to Poll (on the replica thread; must not block)
  // Each refused connection to the replica port, refused message and far
  // future term, on the replica thread; empty: logged at WARN (at most one
  // line a second per member).
  std::function<void(const std::string& why)> on_refused;
};

// What every replica applies committed entries to.
class ReplicaStateMachine {
 public:
  virtual ~ReplicaStateMachine() = default;
  // A committed entry, in log order (the replica thread).
  virtual Status Apply(std::string_view entry) = 0;
  // Makes what Apply wrote durable in the machine's own store (the replica
  // thread, every few milliseconds and when the group stops). Entries
  // need not be durable there before: Raft's log has them, and a replica
  // restarted on its disk rebuilds its state from Raft's snapshot and log.
  virtual Status Flush() { return Status::Ok(); }
  // The whole state, for a snapshot (the replica thread).
  virtual Status Snapshot(std::string* out) = 0;
  // Replaces the whole state with a snapshot's (the replica thread).
  virtual Status Restore(std::string_view snapshot) = 0;
};

enum class ReplicaRole { kUnavailable, kFollower, kCandidate, kLeader };
const char* ReplicaRoleName(ReplicaRole role);

struct ReplicaEvent {
  enum class Kind {
    kCommitted,  // proposal `tag` is on a quorum's disks and applied here
    kFailed,     // proposal `tag` is not known to commit: never acknowledge it. Refused
                 // before Raft had it, it never will; handed to Raft and then
                 // leadership lost, a later leader may still commit it (its
                 // journal then has it, as after a crash before the reply).
    kRole,       // this replica's role, term or known leader changed
  };
  Kind kind = Kind::kRole;
  uint64_t tag = 0;
  Status status;
  ReplicaRole role = ReplicaRole::kUnavailable;
  uint64_t term = 0;
  uint64_t leader_id = 0;  // 0: no leader known
  std::string leader_address;
};

class ReplicaGroup {
 public:
  // Joins (or, on a fresh `dir`, bootstraps with `peers`) the group and
  // starts the replica thread. `machine` must outlive the group.
  static StatusOr<std::unique_ptr<ReplicaGroup>> Start(const ReplicaOptions& options, ReplicaStateMachine* machine);
  ~ReplicaGroup();  // Stop()
  ReplicaGroup(const ReplicaGroup&) = delete;
  ReplicaGroup& operator=(const ReplicaGroup&) = delete;

  // Hands `entry` to Raft; never blocks. Refused unless this replica leads
  // (Unavailable), with max_in_flight results pending (ResourceExhausted)
  // or above max_entry_bytes (TooLarge). Else exactly one kCommitted or
  // kFailed event with `tag` follows.
  Status Propose(std::string entry, uint64_t tag);
  // Once every entry before it, earlier terms' included, is applied here:
  // kCommitted with `tag` (kFailed as for Propose). A new leader's state
  // machine is complete only then (raft_barrier). Refused as Propose is.
  Status Barrier(uint64_t tag);
  // The events since the last call, in order; never blocks.
  void Poll(std::vector<ReplicaEvent>* out);
  // As of the replica thread's last look (every few milliseconds).
  bool is_leader() const;
  uint64_t term() const;
  // The last log index applied here (a follower's lag is the leader's minus its own).
  uint64_t applied_index() const;
  // While this replica leads: each other voter's id and the entries it
  // lacks of those applied here (Raft's match index; a follower that has
  // not answered yet lacks them all). Empty when it does not lead.
  std::vector<std::pair<uint64_t, uint64_t>> follower_lag() const;
  // Leaves the group: pending proposals fail, the thread ends. Idempotent.
  void Stop();

 private:
  class Impl;
  explicit ReplicaGroup(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tailcut
