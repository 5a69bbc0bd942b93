// LocalCluster's ports (issue 43): below the kernel's ephemeral range, so
// that no outgoing connection takes a killed scheduler's port before it is
// restarted on it. Its start: the scheduler listens when Start returns, and
// one that cannot start fails Start with its log.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <set>

#include "tailcut/client/local_cluster.h"

using namespace tailcut;

TEST_CASE("local cluster: its ports are free and below the ephemeral range, which outgoing connections draw from") {
  const int ephemeral = EphemeralPortsFrom();
  REQUIRE(ephemeral > 1024);
  if (ephemeral - 1024 < 4096) {
    WARN("the ephemeral range starts at " << ephemeral << ": no room below it, the OS picks");
    return;
  }
  std::set<int> seen;
  for (int i = 0; i < 50; ++i) {
    const int port = FreeLoopbackPort();
    CAPTURE(port, ephemeral);
    REQUIRE(port > 1024);
    CHECK(port < ephemeral);
    seen.insert(port);
  }
  CHECK(seen.size() > 40);  // spread: clusters started side by side do not meet
}

namespace {

LocalClusterOptions DaemonOptions() {
  LocalClusterOptions o;
  o.name = "start";
  o.scheduler_binary = TAILCUT_SCHEDULER_BIN;
  o.executor_binary = TAILCUT_EXECUTOR_BIN;
  return o;
}

// Whether a TCP connection to 127.0.0.1:`port` is accepted now.
bool Accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

int PortOf(const std::string& endpoint) { return std::stoi(endpoint.substr(endpoint.rfind(':') + 1)); }

}  // namespace

TEST_CASE("local cluster: a started scheduler process already listens on its executor and client ports") {
  auto started = LocalCluster::Start(DaemonOptions());
  REQUIRE(started.ok());
  CHECK(Accepts(PortOf((*started)->executor_endpoint())));
  CHECK(Accepts(PortOf((*started)->client_endpoint())));
}

TEST_CASE("local cluster: a scheduler that cannot start fails Start at once, quoting its log") {
  LocalClusterOptions o = DaemonOptions();
  o.scheduler_flags = {"--set", "scheduler.no_such_option=1"};
  const auto t0 = std::chrono::steady_clock::now();
  auto started = LocalCluster::Start(o);
  REQUIRE_FALSE(started.ok());
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));  // not a wait for executors
  const std::string& why = started.status().message();
  INFO(why);
  CHECK(why.find("exited at start") != std::string::npos);
  CHECK(why.find("no_such_option") != std::string::npos);  // the scheduler's own words
}
