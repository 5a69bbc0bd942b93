// The end-to-end tests' cluster: the real tailcut-scheduler daemon (a child
// process, executors lost after 1 s of silence) and tailcut-executor
// daemons, through the one LocalCluster helper, with a client connected.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "metrics_scrape.h"
#include "tailcut/client/client.h"
#include "tailcut/client/local_cluster.h"

namespace tailcut::testing {

struct DaemonClusterOptions {
  int executors = 1;
  int slots = 2;
  std::vector<std::string> scheduler_flags;              // after the defaults
  std::vector<std::vector<std::string>> executor_flags;  // extra flags of executor i
  bool restart = false;                                  // restart executors that exit
  double client_timeout_s = 10;
  bool allow_shell = false;  // executors run shell tasks (--allow-shell)
  bool http = false;         // /metrics on a free port: cluster->http_endpoint()
  bool keys = true;          // CURVE keys (LocalClusterOptions::keys)
  std::string scheduler_binary = TAILCUT_SCHEDULER_BIN;  // or the tests' build with faults on purpose
};

// Submits `job` and waits (at most 60 s) for its final status.
inline StatusOr<wire::JobStatus> SubmitAndWait(Client& client, const wire::JobSpec& job) {
  auto id = client.Submit(job);
  if (!id.ok()) return id.status();
  WaitOptions w;
  w.timeout_s = 60;
  return client.Wait(*id, w);
}

struct DaemonCluster {
  explicit DaemonCluster(const DaemonClusterOptions& d) {
    LocalClusterOptions o;
    o.name = "it";
    o.scheduler_binary = d.scheduler_binary;
    o.executor_binary = TAILCUT_EXECUTOR_BIN;
    o.scheduler_flags = {"--set", "scheduler.heartbeat_ms=100", "--set", "core.lost_after_s=1.0"};
    o.scheduler_flags.insert(o.scheduler_flags.end(), d.scheduler_flags.begin(), d.scheduler_flags.end());
    o.http = d.http;
    o.keys = d.keys;
    auto started = LocalCluster::Start(o);
    REQUIRE(started.ok());
    cluster = std::move(started).value();
    for (int i = 0; i < d.executors; ++i) {
      LocalExecutorSpec e;
      e.flags = {"--slots", std::to_string(d.slots), "--name", "it-" + std::to_string(i)};
      if (i < static_cast<int>(d.executor_flags.size()))
        e.flags.insert(e.flags.end(), d.executor_flags[i].begin(), d.executor_flags[i].end());
      e.restart = d.restart;
      e.allow_shell = d.allow_shell;
      e.expect_exit = true;  // tests kill some on purpose
      REQUIRE(cluster->AddExecutor(e).ok());
    }
    Status s = cluster->WaitForExecutors(d.executors, 30);
    INFO(s.message());
    REQUIRE(s.ok());
    ClientOptions co = cluster->client_options();
    co.timeout_s = d.client_timeout_s;
    client = std::make_unique<Client>(co);
  }
  std::unique_ptr<LocalCluster> cluster;
  std::unique_ptr<Client> client;
};

}  // namespace tailcut::testing
