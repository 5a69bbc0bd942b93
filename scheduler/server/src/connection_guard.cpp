#include "connection_guard.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/tcp.h>  // struct tcp_info with tcpi_bytes_received (Linux 4.1+)
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tailcut/common/log.h"
#include "tailcut/wire/security.h"

namespace tailcut {
namespace {

// The fewest bytes a peer sends before its handshake can be finished:
// the ZMTP greeting (64), then for NULL a READY command (at least 8), for
// CURVE a HELLO (200) and an INITIATE (at least 257).
constexpr uint64_t kNullHandshakeBytes = 64 + 8;
constexpr uint64_t kCurveHandshakeBytes = 64 + 200 + 257;
constexpr uint32_t kMinPending = 16;
// Connections closed unread per EMFILE event while the backlog drains.
constexpr int kMaxBacklogDrain = 256;

std::string PeerOf(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "";
  return std::string(reinterpret_cast<const char*>(&a), len);
}

int OpenReserve() { return open("/dev/null", O_RDONLY | O_CLOEXEC); }

}  // namespace

uint64_t SetDescriptorLimit(uint32_t max) {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return 0;
  rlim_t want = max ? std::min<rlim_t>(max, r.rlim_max) : r.rlim_max;
  if (want != r.rlim_cur) {
    rlimit n = r;
    n.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &n) == 0)
      r = n;
    else
      TC_LOG(Warn) << "could not set the descriptor limit to " << want << ": " << std::strerror(errno);
  }
  return r.rlim_cur == RLIM_INFINITY ? UINT64_MAX : r.rlim_cur;
}

ConnectionGuard::ConnectionGuard(zmq::context_t& ctx, std::vector<zmq::socket_t*> sockets,
                                 const ConnectionGuardOptions& o, bool curve)
    : handshake_bytes_(curve ? kCurveHandshakeBytes : kNullHandshakeBytes) {
  descriptor_limit_ = SetDescriptorLimit(o.max_descriptors);
  max_pending_ = o.max_pending_connections
                     ? o.max_pending_connections
                     : static_cast<uint32_t>(std::clamp<uint64_t>(descriptor_limit_ / 2, kMinPending, 1u << 20));
  reserve_fd_ = OpenReserve();
  TC_LOG(Info) << "connections: " << descriptor_limit_ << " descriptors, at most " << max_pending_
               << " unfinished handshakes, each closed after "
               << (o.handshake_timeout_ms ? o.handshake_timeout_ms : 30000) << " ms";
  for (zmq::socket_t* s : sockets) {
    if (o.handshake_timeout_ms) s->set(zmq::sockopt::handshake_ivl, static_cast<int>(o.handshake_timeout_ms));
    std::string address = "inproc://tailcut-guard-" + std::to_string(reinterpret_cast<uintptr_t>(s));
    if (zmq_socket_monitor(s->handle(), address.c_str(),
                           ZMQ_EVENT_LISTENING | ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_ACCEPT_FAILED | ZMQ_EVENT_DISCONNECTED |
                               ZMQ_EVENT_CLOSED) != 0)
      throw zmq::error_t();
    zmq::socket_t& m = monitors_.emplace_back(ctx, zmq::socket_type::pair);
    m.set(zmq::sockopt::linger, 0);
    m.connect(address);
  }
}

ConnectionGuard::~ConnectionGuard() {
  if (reserve_fd_ >= 0) close(reserve_fd_);
}

void ConnectionGuard::OnEvents(double now) {
  bool exhausted = false;
  MonitorEvent e;
  for (zmq::socket_t& m : monitors_) {
    while (TakeMonitorEvent(m, &e)) {
      const int fd = static_cast<int>(e.value);
      switch (e.id) {
        case ZMQ_EVENT_LISTENING:
          // Non-blocking, so DrainBacklog never waits in accept(); libzmq's
          // own accept() takes EAGAIN (another thread took the connection).
          if (int flags = fcntl(fd, F_GETFL); flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
            TC_LOG(Warn) << "listener " << fd << " stays blocking: " << std::strerror(errno)
                         << "; its backlog is not drained when descriptors run out";
          else
            listen_fds_.push_back(fd);
          break;
        case ZMQ_EVENT_ACCEPTED: Accepted(fd, now); break;
        case ZMQ_EVENT_DISCONNECTED:
        case ZMQ_EVENT_CLOSED: Forget(fd); break;
        case ZMQ_EVENT_ACCEPT_FAILED:
          if (fd == EMFILE || fd == ENFILE) {
            ++counters_.accept_failures;
            exhausted = true;
          }
          break;
        default: break;
      }
    }
  }
  // Down to three quarters: a flood costs one pass per quarter of the cap.
  if (pending_.size() > max_pending_) Shed(max_pending_ - max_pending_ / 4, now);
  if (!exhausted) return;
  // Out of descriptors: strangers go first (unfinished handshakes, then
  // connections idle since their handshake), then whoever waits in the
  // backlog is turned away (their ZeroMQ reconnects later), so the
  // listener stops spinning and the connections we have are served.
  size_t before = counters_.evicted;
  Shed(pending_.size() / 2, now);
  if (counters_.evicted == before) ShedIdle(now);
  if (counters_.evicted == before) DrainBacklog();
  uint64_t held;
  if (log_.Allow(&held))
    TC_LOG(Warn) << "out of descriptors (limit " << descriptor_limit_
                 << "): " << counters_.evicted - counters_.idle_evicted << " unfinished and " << counters_.idle_evicted
                 << " idle connections shut down, " << counters_.backlog_refused
                 << " turned away from the backlog so far"
                 << (held ? " (" + std::to_string(held) + " more times since the last line)" : "");
}

void ConnectionGuard::Accepted(int fd, double now) {
  ++counters_.accepted;
  uint64_t seq = next_seq_++;
  pending_[fd] = Pending{seq, now, PeerOf(fd)};
  idle_.erase(fd);  // a descriptor reused before its CLOSED event was read
  order_.emplace_back(fd, seq);
}

int64_t ConnectionGuard::Received(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
      len < offsetof(tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received)
    return -1;
  return static_cast<int64_t>(info.tcpi_bytes_received);
}

int64_t ConnectionGuard::ReceivedBy(int fd, const Pending& p) const {
  // Only the connection we saw accepted: a reused descriptor (another
  // peer, or no socket at all) is left alone.
  return p.peer.empty() || PeerOf(fd) != p.peer ? -1 : Received(fd);
}

void ConnectionGuard::Shed(size_t keep, double now) {
  // Oldest first, in two tiers: those that never sent a byte, then those
  // midway (a keyed peer whose handshake waits behind a flood is one:
  // the flood goes before it). Finished ones leave the watch list; those
  // that sent nothing past the handshake yet wait in the idle list.
  std::vector<std::pair<int, uint64_t>> silent, partial;
  for (auto [fd, seq] : order_) {
    auto it = pending_.find(fd);
    if (it == pending_.end() || it->second.seq != seq) continue;  // gone, or a newer connection on that fd
    int64_t got = ReceivedBy(fd, it->second);
    if (got < 0 || static_cast<uint64_t>(got) >= handshake_bytes_) {
      if (got >= 0 && static_cast<uint64_t>(got) <= handshake_bytes_ + kIdleBytes) {
        Pending& idle = idle_[fd] = it->second;
        idle.bytes = got;
        idle.since = now;
      }
      pending_.erase(it);
      continue;
    }
    (got == 0 ? silent : partial).emplace_back(fd, seq);
  }
  std::deque<std::pair<int, uint64_t>> live;
  for (auto* tier : {&silent, &partial})
    for (auto [fd, seq] : *tier) {
      if (pending_.size() > keep) {
        shutdown(fd, SHUT_RDWR);  // ZeroMQ sees the end and closes it
        pending_.erase(fd);
        ++counters_.evicted;
      }
    }
  for (auto e : order_)
    if (auto it = pending_.find(e.first); it != pending_.end() && it->second.seq == e.second) live.push_back(e);
  order_.swap(live);
}

void ConnectionGuard::ShedIdle(double now) {
  std::vector<std::pair<uint64_t, int>> idle;  // (seq, fd): oldest first once sorted
  for (auto it = idle_.begin(); it != idle_.end();) {
    int64_t got = ReceivedBy(it->first, it->second);
    if (got < 0 || static_cast<uint64_t>(got) > handshake_bytes_ + kIdleBytes) {
      it = idle_.erase(it);  // gone, or it talks: not idle
      continue;
    }
    if (got != it->second.bytes) {  // it sent something: idle from now on, if at all
      it->second.bytes = got;
      it->second.since = now;
    } else if (now - it->second.since >= kIdleAfterS) {
      idle.emplace_back(it->second.seq, it->first);
    }
    ++it;
  }
  std::sort(idle.begin(), idle.end());
  const size_t shed = idle.empty() ? 0 : std::max<size_t>(1, idle.size() / 2);
  for (size_t i = 0; i < shed; ++i) {
    shutdown(idle[i].second, SHUT_RDWR);  // ZeroMQ sees the end and closes it
    idle_.erase(idle[i].second);
    ++counters_.evicted;
    ++counters_.idle_evicted;
  }
}

void ConnectionGuard::DrainBacklog() {
  if (reserve_fd_ >= 0) {
    close(reserve_fd_);
    reserve_fd_ = -1;
  }
  for (int listen_fd : listen_fds_) {
    for (int i = 0; i < kMaxBacklogDrain; ++i) {
      int c = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (c < 0) break;  // EAGAIN: the backlog is empty (the listener never blocks)
      close(c);
      ++counters_.backlog_refused;
    }
  }
  reserve_fd_ = OpenReserve();
}

}  // namespace tailcut
