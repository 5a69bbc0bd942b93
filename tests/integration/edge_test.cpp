// Issue #14: the hierarchical edge tier (docs/EDGE.md, "Two tiers") with the
// real daemons on loopback: a parent scheduler, edge schedulers started with
// --parent (each one executor of the parent), and executors under the
// edges. Generous timeouts and no timing assertions: a busy 2-core machine
// only makes these slower.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "tailcut/client/client.h"
#include "tailcut/client/local_cluster.h"

using namespace tailcut;

namespace {

using WallClock = std::chrono::steady_clock;

const std::vector<std::string> kDaemonFlags = {"--policy", "none", "--set", "scheduler.heartbeat_ms=100",
                                               "--set", "core.lost_after_s=3.0", "--log-level", "warn"};

std::unique_ptr<LocalCluster> StartParent() {
  LocalClusterOptions o;
  o.name = "parent";
  o.scheduler_binary = TAILCUT_SCHEDULER_BIN;
  o.executor_binary = TAILCUT_EXECUTOR_BIN;
  o.scheduler_flags = kDaemonFlags;
  auto started = LocalCluster::Start(o);
  REQUIRE(started.ok());
  return std::move(started).value();
}

// An edge scheduler named `name` under `parent` (with the parent's executor
// key), with `executors` executors of `slots` slots.
std::unique_ptr<LocalCluster> StartEdge(const LocalCluster& parent, const std::string& name, int executors, int slots) {
  LocalClusterOptions o;
  o.name = name;
  o.scheduler_binary = TAILCUT_SCHEDULER_BIN;
  o.executor_binary = TAILCUT_EXECUTOR_BIN;
  o.scheduler_flags = kDaemonFlags;
  const std::vector<std::string> edge_flags = {"--parent",
                                              parent.executor_endpoint(),
                                              "--parent-key-file",
                                              parent.keys_dir() + "/executor.key",
                                              "--parent-key",
                                              parent.keys_dir() + "/scheduler.pub",
                                              "--set",
                                              "scheduler.parent_name=\"" + name + "\""};
  o.scheduler_flags.insert(o.scheduler_flags.end(), edge_flags.begin(), edge_flags.end());
  auto started = LocalCluster::Start(o);
  REQUIRE(started.ok());
  std::unique_ptr<LocalCluster> edge = std::move(started).value();
  for (int i = 0; i < executors; ++i) {
    LocalExecutorSpec e;
    e.flags = {"--slots", std::to_string(slots), "--name", name + "-dev" + std::to_string(i), "--log-level", "warn"};
    e.expect_exit = true;  // its edge may be killed under it
    e.allow_shell = true;  // the round's tasks print what the edge relays upward
    REQUIRE(edge->AddExecutor(e).ok());
  }
  Status s = edge->WaitForExecutors(executors, 60);
  INFO(s.message());
  REQUIRE(s.ok());
  return edge;
}

// The parent's executors by name, polled until `done` holds (false on timeout).
template <typename Pred>
bool WaitForParentView(Client& client, double timeout_s, Pred done) {
  auto t0 = WallClock::now();
  while (std::chrono::duration<double>(WallClock::now() - t0).count() < timeout_s) {
    auto list = client.Executors();
    if (list.ok()) {
      std::map<std::string, wire::ExecutorInfo> by_name;
      for (auto& x : *list) by_name[x.name()] = x;
      if (done(by_name)) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

TEST_CASE("edge tier: parent and two edges run a quorum round that still closes at its quorum after an edge is killed") {
  auto parent = StartParent();
  auto edge_a = StartEdge(*parent, "edge-a", 2, 2);
  auto edge_b = StartEdge(*parent, "edge-b", 2, 2);
  ClientOptions co = parent->client_options();
  co.timeout_s = 30;
  Client client(co);
  // Each edge is one executor of the parent, offering its whole fleet's slots.
  REQUIRE(WaitForParentView(client, 60, [](auto& by_name) {
    return by_name.count("edge-a") && by_name.count("edge-b") && by_name.at("edge-a").cpu_slots() == 4 &&
           by_name.at("edge-b").cpu_slots() == 4;
  }));

  // A round of 8 clients that closes at 6 reports (the deadline only bounds
  // the test). The parent places 4 tasks on each edge.
  const uint32_t k = 6;
  wire::JobSpec round = FanoutJob("shell", "sleep 2; echo client-update", 8);
  round.set_name("round");
  round.mutable_rule()->set_kind(wire::CompletionRule::QUORUM);
  round.mutable_rule()->set_k(k);
  round.mutable_rule()->set_min_count(k);
  round.mutable_rule()->set_deadline_s(600);
  round.set_max_attempts(10);
  round.set_return_outputs(true);
  auto id = client.Submit(round);
  REQUIRE(id.ok());

  // Mid-round: both edges hold work of the round, then edge B dies.
  REQUIRE(WaitForParentView(client, 60, [](auto& by_name) {
    return by_name.count("edge-a") && by_name.count("edge-b") && by_name.at("edge-a").running() > 0 &&
           by_name.at("edge-b").running() > 0;
  }));
  edge_b->SignalScheduler(SIGKILL);

  WaitOptions w;
  w.timeout_s = 300;
  auto st = client.Wait(*id, w);
  REQUIRE(st.ok());
  INFO(st->reason());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  CHECK(st->committed() == k);
  // Edge B's loss was an executor loss for the parent: it is dropped.
  CHECK(WaitForParentView(client, 60, [](auto& by_name) { return by_name.count("edge-b") == 0; }));
  auto results = client.Results(*id);
  REQUIRE(results.ok());
  CHECK(results->size() == k);
  // The edge relays each committed task's output upward.
  for (const auto& r : *results) CHECK(r.output() == "client-update\n");
}

TEST_CASE("edge tier: an edge whose parent is gone keeps serving its own clients and registers again when it is back") {
  auto parent = StartParent();
  auto edge = StartEdge(*parent, "edge-solo", 1, 2);
  ClientOptions pco = parent->client_options();
  pco.timeout_s = 30;
  {
    Client pc(pco);
    REQUIRE(WaitForParentView(pc, 60, [](auto& by_name) { return by_name.count("edge-solo") == 1; }));
  }
  parent->SignalScheduler(SIGKILL);

  ClientOptions eco = edge->client_options();
  eco.timeout_s = 30;
  Client local(eco);
  auto id = local.Submit(FanoutJob("sleep", "ms=50", 6));
  REQUIRE(id.ok());
  WaitOptions w;
  w.timeout_s = 120;
  auto st = local.Wait(*id, w);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  CHECK(st->committed() == 6);

  // The parent comes back (same ports, its journal): the edge finds it.
  REQUIRE(parent->RestartScheduler().ok());
  Client pc(pco);
  CHECK(WaitForParentView(pc, 90, [](auto& by_name) { return by_name.count("edge-solo") == 1; }));
  // And the parent's work runs there again.
  auto pid = pc.Submit(FanoutJob("sleep", "ms=20", 4));
  REQUIRE(pid.ok());
  auto pst = pc.Wait(*pid, w);
  REQUIRE(pst.ok());
  CHECK(pst->state() == wire::JOB_SUCCEEDED);
}
