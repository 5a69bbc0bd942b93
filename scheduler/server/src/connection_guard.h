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
//  * on EMFILE/ENFILE frees descriptors: unfinished connections first,
//    then finished ones that have sent nothing past their handshake for a
//    second or more (idle: without keys a stranger's ZeroMQ socket
//    finishes the NULL handshake at once), then the listen backlog
//    through a reserved descriptor; logs once per interval, and keeps
//    serving the connections it has.
// Nothing in it blocks: the listeners are non-blocking, so draining a
// backlog that another thread emptied cannot stall the loop (it did: the
// loop sat in accept() while libzmq's I/O thread waited for it to read
// the monitor, and the scheduler answered nothing for good).
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
    uint64_t idle_evicted = 0;     // of `evicted`: finished connections that sent nothing past the handshake
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

  // A finished connection that has received nothing for kIdleAfterS, and
  // no more than kIdleBytes past its handshake in all, is idle: shed after
  // the unfinished ones (an executor heartbeats, a waiting client polls).
  static constexpr uint64_t kIdleBytes = 512;
  static constexpr double kIdleAfterS = 1.0;

  uint64_t descriptor_limit() const { return descriptor_limit_; }
  uint32_t max_pending() const { return max_pending_; }
  size_t pending() const { return pending_.size(); }
  const Counters& counters() const { return counters_; }

 private:
  struct Pending {
    uint64_t seq;
    double accepted_at;
    std::string peer;  // getpeername at accept: guards against a reused descriptor
    int64_t bytes = -1;  // idle list: bytes received when last looked at ...
    double since = 0;    // ... and when they were first that many
  };
  void Accepted(int fd, double now);
  void Forget(int fd) {
    pending_.erase(fd);
    idle_.erase(fd);
  }
  // Shuts down unfinished connections until `keep` remain (silent ones
  // first, each tier oldest first); finished ones leave the watch list,
  // for the idle list when they have sent nothing past the handshake.
  void Shed(size_t keep, double now);
  // Shuts down the older half (at least one) of the connections idle for
  // kIdleAfterS at `now`; those that sent more since leave the list.
  void ShedIdle(double now);
  // Whether `p` is still the connection on `fd` we saw accepted (not a
  // reused descriptor) and how many bytes it received; -1 when not.
  int64_t ReceivedBy(int fd, const Pending& p) const;
  // Bytes the kernel has received on `fd` (TCP_INFO); -1 when unreadable.
  static int64_t Received(int fd);
  void DrainBacklog();

  std::vector<zmq::socket_t> monitors_;
  std::vector<int> listen_fds_;
  std::unordered_map<int, Pending> pending_;
  std::unordered_map<int, Pending> idle_;       // finished, nothing sent past the handshake yet
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
