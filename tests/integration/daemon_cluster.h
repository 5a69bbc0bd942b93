// The end-to-end tests' cluster: the real tailcut-scheduler daemon (a child
// process, executors lost after 1 s of silence) and tailcut-executor
// daemons, through the one LocalCluster helper, with a client connected.
#pragma once

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

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
};

// Submits `job` and waits (at most 60 s) for its final status.
inline StatusOr<wire::JobStatus> SubmitAndWait(Client& client, const wire::JobSpec& job) {
  auto id = client.Submit(job);
  if (!id.ok()) return id.status();
  WaitOptions w;
  w.timeout_s = 60;
  return client.Wait(*id, w);
}

// GET http://ENDPOINT/metrics ("127.0.0.1:PORT"): "name{labels}" -> value
// of every sample; empty when the scrape failed.
inline std::map<std::string, double> ScrapeMetrics(const std::string& endpoint) {
  std::map<std::string, double> out;
  const size_t colon = endpoint.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(endpoint.substr(colon + 1))));
  if (inet_pton(AF_INET, endpoint.substr(0, colon).c_str(), &a.sin_addr) != 1) return out;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return out;
  timeval limit{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  std::string reply;
  const char request[] = "GET /metrics HTTP/1.0\r\n\r\n";
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::send(fd, request, sizeof request - 1, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof request - 1)) {
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  std::istringstream in(reply.substr(std::min(reply.size(), reply.find("\r\n\r\n"))));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line[0] == '\r') continue;
    const size_t sp = line.rfind(' ');
    if (sp != std::string::npos) out[line.substr(0, sp)] = std::atof(line.c_str() + sp + 1);
  }
  return out;
}

struct DaemonCluster {
  explicit DaemonCluster(const DaemonClusterOptions& d) {
    LocalClusterOptions o;
    o.name = "it";
    o.scheduler_binary = TAILCUT_SCHEDULER_BIN;
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
