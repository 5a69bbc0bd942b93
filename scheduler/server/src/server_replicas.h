// A replicated scheduler's side of the loop (docs/RELIABILITY.md,
// "Replicas"; server_replicas.cpp): the Raft group, this replica's role,
// the turn's journal writes as one entry, and the messages held until the
// entry that makes what they tell durable has committed.
//
// A replica starts following: it answers clients and executors with
// NOT_LEADER, naming the leader. When the group elects it, it waits for a
// barrier (every earlier entry applied to its journal), recovers from a
// copy of the journal as a restarted scheduler does, and only then
// accepts, dispatches and commits. Each loop turn's group commit is then
// one proposal; the turn's replies and Work go out once it has committed.
// A leader whose proposal fails, or that loses leadership, stops at once
// and drops what it held: its core has run ahead of the journal, so the
// process ends (SchedulerServer::deposed) and comes back as a follower.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "journal_batch.h"
#include "journal_state_machine.h"
#include "replica_group.h"
#include "tailcut/server/server.h"

namespace tailcut::server_detail {

struct Replication {
  enum class State {
    kFollowing,   // answers NOT_LEADER; its core is empty
    kTakingOver,  // elected: waiting for the barrier
    kLeading,     // recovered: accepts, dispatches, proposes
    kDeposed,     // led and lost it: sends nothing more, the loop stops
  };
  // Turns proposed and not committed yet: beyond this many the journal's
  // writes wait and go in one later entry (a natural group commit).
  static constexpr size_t kMaxTurnsInFlight = 8;
  // As a single scheduler's background commits (Durability): writes no
  // reply waits for are proposed at most this often.
  static constexpr double kBackgroundProposeS = 0.05;

  struct Held {
    bool to_client = false;  // else to an executor
    std::string route;
    zmq::message_t frame;
  };
  struct Turn {
    uint64_t tag = 0;
    std::vector<Held> held;
    double proposed_at = 0;  // the loop's clock
  };
  // A group commit slower than this is logged (at most one line a second).
  static constexpr double kSlowCommitS = 0.5;

  ~Replication();

  uint64_t id = 0;
  std::vector<ReplicaPeerOptions> peers;
  std::unique_ptr<JournalStateMachine> machine;  // before group: outlives it
  std::unique_ptr<ReplicaGroup> group;
  int wake_fd = -1;  // eventfd: the replica thread has events to Poll
  State state = State::kFollowing;
  uint64_t term = 0, leader_id = 0;  // as last heard (leader 0: none known)
  uint64_t lead_term = 0;            // the term it took over in
  uint64_t barrier_tag = 0, next_tag = 1;
  JournalBatch batch;          // the turn's journal writes (the sink's, once leading)
  std::vector<Held> current;   // held this turn, before its proposal
  std::deque<Turn> in_flight;  // proposed, oldest first
  double last_proposal = 0;
  double last_slow_log = 0;
  std::vector<ReplicaEvent> events;  // Poll's, reused
};

// The replica key file: 64 hex digits (32 bytes), whitespace around them allowed.
StatusOr<std::string> ReadReplicaKey(const std::string& path);

}  // namespace tailcut::server_detail
