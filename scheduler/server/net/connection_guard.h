// Descriptors are not a door (docs/LIMITS.md, "Connections"): a stranger
// who opens TCP connections and sends nothing must not take the
// descriptors that keyed executors and clients need, nor spin the
// scheduler. libzmq accepts every connection on its own I/O thread and has
// no cap on unfinished handshakes, and on EMFILE its listener retries in a
// busy loop; the guard watches the sockets' monitors and
//  * bounds how long a handshake may take (ZMQ_HANDSHAKE_IVL),
//  * caps connections that have not finished their handshake: past the
//    cap it shuts such connections down, those that never sent a byte
//    first, each kind oldest first (a keyed peer finishes its handshake
//    in milliseconds, a silent one never does),
//  * on EMFILE/ENFILE frees descriptors (unfinished connections first,
//    then the listen backlog through a reserved descriptor), logs once per
//    interval, and keeps serving the connections it has.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>

#include "tailcut/common/log_limiter.h"
#include "tailcut/common/status.h"

namespace tailcut {

struct ConnectionGuardOptions {
  // A connection that has not finished the ZMTP (and CURVE) handshake by
  // then is closed by ZeroMQ (ZMQ_HANDSHAKE_IVL). 0 = ZeroMQ's 30 s.
  uint32_t handshake_timeout_ms = 5000;
  // Connections, over all guarded sockets, that may sit unfinished at
  // once; past it the oldest is shut down. 0 = half the descriptor
  // limit (at least 16), so strangers never hold more.
  uint32_t max_pending_connections = 0;
  // The soft RLIMIT_NOFILE to run with: 0 = raise it to the hard limit.
  uint32_t max_descriptors = 0;
};

class ConnectionGuard {
 public:
  struct Counters {
    uint64_t accepted = 0;
    uint64_t evicted = 0;          // unfinished connections shut down (cap or EMFILE)
    uint64_t accept_failures = 0;  // EMFILE/ENFILE reported by a listener
    uint64_t backlog_refused = 0;  // connections closed unread from a full listen backlog
  };

  // Sets the descriptor limit and the sockets' handshake timeout and starts
  // their monitors: call before the sockets bind. `curve`: the sockets use
  // CURVE, whose handshake is longer than the NULL one.
  ConnectionGuard(zmq::context_t& ctx, std::vector<zmq::socket_t*> sockets, const ConnectionGuardOptions& o,
                  bool curve);
  ~ConnectionGuard();
  ConnectionGuard(const ConnectionGuard&) = delete;
  ConnectionGuard& operator=(const ConnectionGuard&) = delete;

  // The monitors' sockets, for the loop's poll; OnEvents when any is readable.
  std::vector<zmq::socket_t>& monitors() { return monitors_; }
  void OnEvents(double now);

  uint64_t descriptor_limit() const { return descriptor_limit_; }
  uint32_t max_pending() const { return max_pending_; }
  size_t pending() const { return pending_.size(); }
  const Counters& counters() const { return counters_; }

 private:
  struct Pending {
    uint64_t seq;
    double accepted_at;
    std::string peer;  // getpeername at accept: guards against a reused descriptor
  };
  void Accepted(int fd, double now);
  void Forget(int fd) { pending_.erase(fd); }
  // Shuts down unfinished connections until `keep` remain (silent ones
  // first, each tier oldest first); finished ones leave the watch list.
  void Shed(size_t keep);
  // Bytes the kernel has received on `fd` (TCP_INFO); -1 when unreadable.
  static int64_t Received(int fd);
  void DrainBacklog();

  std::vector<zmq::socket_t> monitors_;
  std::vector<int> listen_fds_;
  std::unordered_map<int, Pending> pending_;
  std::deque<std::pair<int, uint64_t>> order_;  // (fd, seq), oldest first; stale entries skipped
  // Not kept in step on every event: Accepted appends, Shed compacts.
  uint64_t next_seq_ = 0;
  uint64_t handshake_bytes_;  // the fewest bytes a finished handshake has received
  uint64_t descriptor_limit_ = 0;
  uint32_t max_pending_ = 0;
  int reserve_fd_ = -1;
  Counters counters_;
  LogLimiter log_{std::chrono::seconds(10)};
};

// Sets the soft RLIMIT_NOFILE to `max` (0: the hard limit); returns the
// limit in force.
uint64_t SetDescriptorLimit(uint32_t max);

}  // namespace tailcut
