// Issue 43: replies to a client that does not read wait in the scheduler
// (bounded per client) instead of being dropped beyond client_hwm, and a
// client that stays full is disconnected with a reason (docs/LIMITS.md,
// "Messages and queues"). The real server on loopback; the client is a raw
// DEALER with a one-message queue and a tiny TCP window (and the scheduler's
// queue per client is 10 messages), so the replies back up into the
// scheduler. Three ways it ends: the client reads late but within
// client_stall_s (every reply, in order), it reads nothing for longer than
// client_stall_s, or its held replies exceed client_backlog_bytes
// (disconnected with the reason, then served again).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "server_fixture.h"

using namespace tailcut;

namespace {

constexpr uint64_t kRequests = 5000;  // more than the scheduler's queue and the client's buffers

// The client socket on ipc:// (a Unix socket, whose kernel buffer is a
// fixed net.core.wmem_default, ~208 KiB): on loopback TCP the connection's
// send buffer grows towards tcp_wmem's 4 MiB, and reading that much back
// through the client's tiny window took minutes.
ServerOptions SlowClientOptions(uint32_t backlog_bytes, double stall_s) {
  static int made = 0;
  ServerOptions o = server_test::TestOptions();
  o.client_endpoint = "ipc://" + (std::filesystem::temp_directory_path() /
                                  ("tailcut-slow-" + std::to_string(getpid()) + "-" + std::to_string(++made)))
                                     .string();
  o.client_hwm = 10;
  o.client_backlog_bytes = backlog_bytes;
  o.client_stall_s = stall_s;
  return o;
}

// A client that sends status requests (ids 1..n) for a job
// that does not exist, without reading the UNKNOWN_JOB replies.
struct SlowClient {
  explicit SlowClient(const std::string& endpoint) : sock(ctx, zmq::socket_type::dealer) {
    sock.set(zmq::sockopt::linger, 0);
    sock.set(zmq::sockopt::rcvhwm, 1);
    sock.set(zmq::sockopt::rcvbuf, 2048);
    sock.connect(endpoint);
  }
  void Ask(uint64_t id) {
    wire::ClientRequest req;
    req.set_version(kProtocolVersion);
    req.set_request_id(id);
    req.mutable_status()->set_job_id(999999);
    sock.send(ToFrame(req), zmq::send_flags::none);
  }
  // The next reply within `seconds`; false when none came.
  bool Next(wire::ClientReply* out, int ms = 2000) {
    zmq::pollitem_t item{sock.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(ms)) <= 0) return false;
    zmq::message_t frame;
    return sock.recv(frame, zmq::recv_flags::dontwait) && FromFrame(frame, out);
  }
  zmq::context_t ctx;
  zmq::socket_t sock;
};

// Enough requests that their replies overflow every buffer on the way: the
// scheduler's queue (client_hwm), the Unix socket's kernel buffer
// (net.core.wmem_default) and the client's. Replies are ~60 bytes; twice
// that volume, so some are held back in the scheduler.
uint64_t RequestsPastBuffers() {
  uint64_t wmem = 212992;
  if (std::FILE* f = std::fopen("/proc/sys/net/core/wmem_default", "r")) {
    if (std::fscanf(f, "%lu", &wmem) != 1) wmem = 212992;
    std::fclose(f);
  }
  return 2 * wmem / 50 + kRequests;
}

// Sends `n` requests, reads nothing for `idle`, then reads until nothing
// more comes: how many were answered, and the scheduler's last word (the
// reply with request id 0) if any. The replies come in order, none missing
// before that word; after it the connection is served again (requests the
// scheduler read after the cut are answered).
uint64_t AskThenRead(SlowClient& c, uint64_t n, std::chrono::milliseconds idle, std::string* reason) {
  for (uint64_t i = 1; i <= n; ++i) c.Ask(i);
  std::this_thread::sleep_for(idle);
  wire::ClientReply r;
  uint64_t answered = 0, last = 0;
  while (c.Next(&r, 1000)) {
    if (r.request_id() == 0) {
      *reason = r.error().message();
      continue;
    }
    if (reason->empty())
      REQUIRE(r.request_id() == last + 1);
    else
      REQUIRE(r.request_id() > last);
    last = r.request_id();
    ++answered;
  }
  return answered;
}

// A client sent more than the buffers hold, reading nothing for 3 s: it
// gets the replies before the cut in order, then the reason it was
// disconnected (which `why` must match), and is served again after.
void ExpectDisconnected(uint32_t backlog_bytes, double stall_s,
                        const Catch::Matchers::StdString::ContainsMatcher& why) {
  server_test::RunningServer s(SlowClientOptions(backlog_bytes, stall_s));
  SlowClient c(s.server->client_endpoint());
  const uint64_t n = RequestsPastBuffers();
  std::string reason;
  const uint64_t answered = AskThenRead(c, n, std::chrono::seconds(3), &reason);
  INFO(answered << " of " << n << " answered");
  CHECK(answered < n);                                                          // the rest were dropped ...
  CHECK_THAT(reason, Catch::Contains("disconnected by the scheduler") && why);  // ... and it was told why
  c.Ask(n + 1);  // a connection that reads again is served again
  wire::ClientReply r;
  REQUIRE(c.Next(&r));
  CHECK(r.request_id() == n + 1);
}

}  // namespace

TEST_CASE("slow client: one over client_backlog_bytes is disconnected with the reason, and served again after") {
  // Its replies exceed client_backlog_bytes, here the first one held back.
  ExpectDisconnected(1, 30, Catch::Contains("scheduler.client_backlog_bytes = 1"));
}

TEST_CASE("slow client: one that reads none of its held replies for client_stall_s is disconnected with the reason") {
  // Room for every reply (64 MiB), but a stall of 1 s: the client reads
  // nothing for 3 s, so its held replies make no progress past the stall.
  ExpectDisconnected(64u << 20, 1, Catch::Contains("for 1.000000 s (scheduler.client_stall_s)"));
}

TEST_CASE("slow client: one that reads late, within client_stall_s, loses nothing past the buffers") {
  // The same volume, a stall limit longer than the pause: every reply comes.
  server_test::RunningServer s(SlowClientOptions(64u << 20, 30));
  SlowClient c(s.server->client_endpoint());
  const uint64_t n = RequestsPastBuffers();
  std::string reason;
  CHECK(AskThenRead(c, n, std::chrono::seconds(3), &reason) == n);
  CHECK(reason.empty());
}
