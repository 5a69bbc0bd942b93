// The HTTP face under a flood (issue #22): idle and slow-header connections
// cannot keep a scrape out, and each is closed at the request time limit.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdio>
#include <chrono>
#include <thread>
#include <vector>

#include <httplib.h>

#include "http_server.h"

using namespace tailcut;
using Clock = std::chrono::steady_clock;

namespace {

int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

// Seconds until the server closes `fd` (reads EOF or an error), at most `max_s`.
double SecondsUntilClosed(int fd, double max_s) {
  auto t0 = Clock::now();
  char buf[256];
  while (std::chrono::duration<double>(Clock::now() - t0).count() < max_s) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) > 0 && ::recv(fd, buf, sizeof buf, MSG_DONTWAIT) <= 0) break;
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Served {
  HttpServer http;
  int port = 0;
  Served() {
    http.Get("/metrics", [] { return HttpServer::Reply{200, "text/plain", "tailcut_up 1\n", {}}; });
    REQUIRE(http.Start("127.0.0.1:0").ok());
    port = ParseHttpListen(http.endpoint())->second;
  }
};

}  // namespace

TEST_CASE("http: /metrics answers within 1 s under 300 idle and 8 slow-header connections") {
  Served s;
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) idle.push_back(Connect(s.port));
  std::vector<int> slow;
  for (int i = 0; i < 8; ++i) {
    slow.push_back(Connect(s.port));
    REQUIRE(::send(slow.back(), "GET /metrics HTTP/1.1\r\n", 23, MSG_NOSIGNAL) == 23);
  }
  std::atomic<bool> stop{false};
  std::thread dribble([&] {  // a header byte every 100 ms, never the end
    while (!stop) {
      for (int fd : slow) ::send(fd, "X", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all accepted and waiting
  double worst = 0;
  for (int i = 0; i < 5; ++i) {
    httplib::Client cli("127.0.0.1", s.port);
    cli.set_read_timeout(5, 0);
    auto t0 = Clock::now();
    auto res = cli.Get("/metrics");
    double took = std::chrono::duration<double>(Clock::now() - t0).count();
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK(res->body == "tailcut_up 1\n");
    worst = std::max(worst, took);
  }
  std::printf("http flood: 300 idle + 8 slow-header connections, slowest of 5 scrapes %.3f s\n", worst);
  CHECK(worst < 1.0);
  // The slow ones are cut off at the request time limit, not kept for ever.
  const double limit_s = std::chrono::duration<double>(kHttpRequestTimeLimit).count();
  double closed_after = SecondsUntilClosed(slow[0], 4 * limit_s);
  std::printf("http flood: a slow-header connection closed after %.2f s more (limit %.1f s from accept)\n",
              closed_after, limit_s);
  CHECK(closed_after < 2 * limit_s);
  stop = true;
  dribble.join();
  for (int fd : idle) ::close(fd);
  for (int fd : slow) ::close(fd);
}

TEST_CASE("http: beyond the connection cap the oldest waiting connection is cut off, not the new one") {
  Served s;
  std::vector<int> conns;
  for (size_t i = 0; i < kHttpMaxConnections; ++i) conns.push_back(Connect(s.port));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  int extra = Connect(s.port);
  // The first one is closed at once (long before the request time limit).
  CHECK(SecondsUntilClosed(conns.front(), 1.5) < 1.0);
  const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::send(extra, req, sizeof req - 1, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof req - 1));
  std::string got;
  char buf[512];
  for (ssize_t n; (n = ::recv(extra, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<size_t>(n));
  CHECK(got.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(got.find("tailcut_up 1") != std::string::npos);
  ::close(extra);
  for (int fd : conns) ::close(fd);
}
