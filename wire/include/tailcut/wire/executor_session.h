// The executor side of the executor protocol (docs/PROTOCOL.md), one piece
// for the executor daemon (executor/src/executor.cpp) and an edge's link to
// its parent scheduler (the scheduler server's parent link): the DEALER
// socket to the scheduler; registering, with the attempts still held and
// the results not yet delivered, and again with backoff after a silence or
// an UNKNOWN_EXECUTOR; the outbox of started attempts and results, capped
// in bytes so that a Report or a Register always fits a frame, and trimmed
// when the RegisterAck says the Register's results arrived; heartbeats; the
// Goodbye. What an executor offers and does with Work is its owner's.
//
// Not thread-safe: the loop that owns it calls it, with its own clock
// (seconds, any origin, never going back).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "tailcut.pb.h"
#include "tailcut/common/ids.h"
#include "tailcut/common/status.h"
#include "tailcut/wire/security.h"

namespace tailcut {

struct SessionOptions {
  // The scheduler's executor endpoint, or its replicas' as a comma-separated
  // list (docs/RELIABILITY.md, "Replicas"): the session follows a NOT_LEADER
  // answer to the leader it names (if listed here), and moves to the next
  // one when the one it talks to is silent for the loss timeout.
  std::string endpoint;
  std::string name;                // Register.name; the routing id adds "/" and 8 random hex digits
  std::string peer = "scheduler";  // in logs: "scheduler", "parent"
  std::string self = "executor";   // in refusal reasons: "executor", "edge"
  uint32_t heartbeat_ms = 1000;    // until a RegisterAck sets it
  uint32_t lost_after_ms = 0;      // silence before registering again; 0: the ack's, else 10 heartbeats
  double register_retry_s = 1;     // between Registers: this at first ...
  double max_backoff_s = 1;        // ... doubling up to this
  uint64_t max_message_bytes = 64u << 20;
  uint64_t max_output_bytes = 0;  // outputs and errors held unsent; 0: half a message
  PeerKeys keys;                  // none: plain TCP (a warning off this machine)
  // Watch the handshake (a socket monitor: two more sockets) to say why a
  // key was refused. tailcut-swarm turns it off without keys, where no
  // handshake can fail that way, to hold thousands of sessions per process.
  bool watch_handshake = true;
};

class ExecutorSession {
 public:
  struct Hooks {
    // Fills what the executor offers: slots, GPUs, labels, kernels and the
    // attempts it holds (`running`); the session adds the name, the host
    // and the undelivered results. false: nothing to offer yet (asked
    // again a heartbeat later).
    std::function<bool(wire::Register*)> offer;
    std::function<void(wire::Work*)> work;
    // Every Report about to go out: signals; on heartbeats also progress.
    std::function<void(wire::Report*, bool heartbeat)> report;
    // Optional: a RegisterAck arrived (`first`: after registering anew).
    std::function<void(const wire::RegisterAck&, bool first)> registered;
    // Optional: what the executor keeps when the scheduler is lost, for the log.
    std::function<std::string()> holding;
  };

  ExecutorSession(SessionOptions options, zmq::context_t& ctx, Hooks hooks);
  ~ExecutorSession();
  ExecutorSession(const ExecutorSession&) = delete;
  ExecutorSession& operator=(const ExecutorSession&) = delete;

  // Creates and connects the socket (keys applied); nothing is sent yet.
  Status Connect();
  // The socket to poll. A move to another endpoint (replicas) replaces it:
  // ask again after each call into the session.
  zmq::socket_t& socket() { return socket_; }
  uint64_t sockets_opened() const { return sockets_opened_; }  // changes when socket() is a new one
  const SessionOptions& options() const { return o_; }
  const std::string& endpoint() const { return endpoints_[current_]; }  // the one it talks to now
  bool registered() const { return state_ == State::kRegistered; }
  uint64_t executor_id() const { return executor_id_; }
  // A Register or events wait for a connection: poll the socket for POLLOUT.
  bool want_out() const { return register_unsent_ || !OutboxEmpty(); }

  // ----------------------------------------------------------- outbox --
  void AddStarted(AttemptId id) { outbox_.add_started()->set_attempt_id(id); }
  // An answer to a Promote (docs/JOBS.md, "Output directories"); the
  // scheduler resends the Promote until one arrives, so a dropped one is safe.
  wire::Promoted* AddPromoted() { return outbox_.add_promoted(); }
  // `id` not run (REFUSED) or failed, with the reason; not capped.
  wire::AttemptResult* Refuse(AttemptId id, wire::AttemptResult::Outcome outcome, const std::string& why);
  // A finished attempt's result under the byte cap: one that does not fit
  // now is refused (run it elsewhere), one that never fits fails. Takes
  // the contents of `r`.
  void AddResult(wire::AttemptResult* r);
  uint64_t held_output_bytes() const { return held_output_bytes_; }
  uint64_t output_cap() const { return o_.max_output_bytes ? o_.max_output_bytes : o_.max_message_bytes / 2; }
  std::string output_cap_name() const { return o_.max_output_bytes ? "max_output_bytes" : "max_message_bytes/2"; }
  uint64_t refused() const { return refused_; }
  // The highest leader term a RegisterAck or Work carried (replicas; 0:
  // none), and how many from a lower term were ignored (docs/PROTOCOL.md,
  // "Terms").
  uint64_t term_seen() const { return term_seen_; }
  uint64_t stale_ignored() const { return stale_ignored_; }

  // ------------------------------------------------------------- loop --
  // Everything the scheduler sent.
  void OnReadable(double now);
  // The socket is writable: a Register that found no connection goes now.
  void OnWritable(double now);
  // Registering (with backoff), noticing a silent scheduler, heartbeats.
  void Tick(double now);
  // Sends the outbox as one Report (registered only); heartbeats go out
  // even when empty.
  void Flush(bool heartbeat = false);
  bool HeartbeatDue(double now) const { return registered() && now >= next_heartbeat_; }
  // When Tick next has something to do.
  double NextTimer() const;
  // What the executor offers changed: register again now.
  void Reregister(double now);
  // Leaves the scheduler (Goodbye) and drops the outbox; registers again
  // a heartbeat later, when the offer allows.
  void Leave(const std::string& reason, double now);
  // Clean shutdown: a Goodbye when registered, lingering up to `linger_ms`.
  void Goodbye(const std::string& reason, int linger_ms);

 private:
  enum class State { kRegistering, kRegistered };

  bool OutboxEmpty() const {
    return outbox_.started_size() == 0 && outbox_.results_size() == 0 && outbox_.promoted_size() == 0;
  }
  bool Send(const wire::ExecutorMessage& msg);
  void Register(double now);
  void Handle(const zmq::message_t& frame, double now);
  void OnRegistered(const wire::RegisterAck& ack, double now);
  void OnError(const wire::Error& e, double now);
  // False for a RegisterAck or Work from a term below term_seen_ (a deposed
  // leader's), unless only such have come for kStaleGroupLosses loss
  // timeouts: then the group was made anew, with its terms from 1.
  bool TermCurrent(uint64_t term, const char* what, double now);
  void Lost(const std::string& why, double now);
  // Talks to endpoints_[next] from now on, registering there with all it holds.
  void MoveTo(size_t next, const std::string& why, double now);
  // (Re)creates socket_, connected to endpoint().
  Status OpenSocket();

  SessionOptions o_;
  zmq::context_t& ctx_;
  Hooks hooks_;
  zmq::socket_t socket_;
  std::string routing_id_;  // kept across moves
  uint64_t sockets_opened_ = 0;
  std::unique_ptr<HandshakeMonitor> handshake_;
  std::vector<std::string> endpoints_;  // o_.endpoint's list
  size_t current_ = 0;

  State state_ = State::kRegistering;
  uint64_t executor_id_ = 0;
  double heartbeat_s_, lost_after_s_, backoff_s_;
  double last_heard_ = 0, next_heartbeat_ = 0, next_register_ = 0;
  double waiting_since_ = 0, last_wait_log_ = 0, last_error_log_ = -100, last_handshake_log_ = -100;
  bool handshake_logged_definitive_ = false;  // the last handshake line said what is wrong for sure
  int register_tries_ = 0;
  bool register_unsent_ = false;
  int results_in_register_ = 0;     // outbox results the last sent Register carried
  uint64_t held_output_bytes_ = 0;  // output and error bytes in the outbox
  uint64_t refused_ = 0;            // attempts refused or failed over the caps
  uint64_t term_seen_ = 0, stale_ignored_ = 0;
  double stale_since_ = -1, last_stale_log_ = -100;  // stale_since_: the first stale message since a current one
  static constexpr double kStaleGroupLosses = 3;
  wire::Report outbox_;             // started / results not yet sent
  // Results handed to ZeroMQ lately. A scheduler killed after reading one
  // but before its journal committed it would run the task again (a side
  // effect twice): a Register carries them again as undelivered, and a
  // scheduler that has them already ignores them. The newest kSentKept, at
  // most kSentKeptBytes of output.
  static constexpr size_t kSentKept = 4096;
  static constexpr uint64_t kSentKeptBytes = 8 << 20;
  std::deque<wire::AttemptResult> sent_results_;
  uint64_t sent_bytes_ = 0;
};

}  // namespace tailcut
