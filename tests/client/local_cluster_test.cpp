// LocalCluster's ports (issue 43): below the kernel's ephemeral range, so
// that no outgoing connection takes a killed scheduler's port before it is
// restarted on it.
#include <catch2/catch.hpp>

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
