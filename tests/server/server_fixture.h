// The scheduler daemon over real ZeroMQ sockets on loopback, with a
// scripted executor (a raw DEALER) so every message is under the test's
// control. Shared by the server's tests, one file per room of the server
// (docs/ARCHITECTURE.md, "Inside the server"): server_test.cpp (the loop,
// dispatch and watchers), server_net_test.cpp (caps and bad input),
// server_durability_test.cpp (the journal across restarts),
// server_edge_test.cpp (an edge under its parent).
#pragma once

#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "tailcut/client/client.h"
#include "tailcut/predictors/trace.h"
#include "tailcut/server/journal.h"
#include "tailcut/server/server.h"
#include "tailcut/wire/wire.h"

namespace tailcut::server_test {

// Loopback endpoints, fast heartbeats; `tweak` adjusts the rest.
inline ServerOptions TestOptions(double lost_after_s = 1.0) {
  ServerOptions o;
  o.executor_endpoint = "tcp://127.0.0.1:*";
  o.client_endpoint = "tcp://127.0.0.1:*";
  o.heartbeat_ms = 50;
  o.core.lost_after_s = lost_after_s;
  return o;
}

struct RunningServer {
  explicit RunningServer(double lost_after_s = 1.0) : RunningServer(TestOptions(lost_after_s)) {}
  explicit RunningServer(const ServerOptions& o, PolicyChain policies = {}) {
    server = std::make_unique<SchedulerServer>(o, std::move(policies));
    REQUIRE(server->Bind().ok());
    thread = std::thread([this] { server->Run(); });
  }
  ~RunningServer() {
    server->Stop();
    thread.join();
  }
  ClientOptions ClientOpts() const {
    ClientOptions c;
    c.endpoint = server->client_endpoint();
    c.timeout_s = 5;
    return c;
  }
  std::unique_ptr<SchedulerServer> server;
  std::thread thread;
};

// A hand-driven executor.
struct ScriptedExecutor {
  ScriptedExecutor(zmq::context_t& ctx, const std::string& endpoint) : sock(ctx, zmq::socket_type::dealer) {
    sock.set(zmq::sockopt::linger, 0);
    sock.connect(endpoint);
  }
  void Send(const wire::ExecutorMessage& m) { sock.send(ToFrame(m), zmq::send_flags::none); }
  void Register(uint32_t slots, std::vector<std::string> kernels = {"noop", "sleep"}) {
    wire::ExecutorMessage m;
    m.set_version(kProtocolVersion);
    m.mutable_register_()->set_name("scripted");
    m.mutable_register_()->set_cpu_slots(slots);
    for (auto& k : kernels) {
      m.mutable_register_()->add_kernels(k);
      if (k == "noop" || k == "sleep") m.mutable_register_()->add_idempotent_kernels(k);  // as the real executor says
    }
    Send(m);
  }
  // Next message that is not a heartbeat; false after `seconds`.
  bool Next(wire::SchedulerToExecutor* out, double seconds = 5) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      zmq::pollitem_t item{sock.handle(), 0, ZMQ_POLLIN, 0};
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      zmq::poll(&item, 1, std::clamp(left, std::chrono::milliseconds(1), std::chrono::milliseconds(50)));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      zmq::message_t f;
      (void)sock.recv(f);
      REQUIRE(FromFrame(f, out));
      if (!out->has_heartbeat()) return true;
    }
    return false;
  }
  void Heartbeat() {
    wire::ExecutorMessage m;
    m.set_version(kProtocolVersion);
    m.mutable_report();
    Send(m);
  }
  void Complete(const std::vector<uint64_t>& attempts, double run_s = 0.001) {
    wire::ExecutorMessage m;
    m.set_version(kProtocolVersion);
    for (uint64_t a : attempts) {
      auto* r = m.mutable_report()->add_results();
      r->set_attempt_id(a);
      r->set_outcome(wire::AttemptResult::OK);
      r->set_output("done " + std::to_string(a));
      r->set_run_s(run_s);
    }
    Send(m);
  }
  zmq::socket_t sock;
};

// A server with one registered scripted executor and a client.
struct OneExecutorCluster {
  explicit OneExecutorCluster(const ServerOptions& o, uint32_t slots) : rs(o), ex(ctx, rs.server->executor_endpoint()) {
    ex.Register(slots);
    wire::SchedulerToExecutor msg;
    REQUIRE(ex.Next(&msg));
    REQUIRE(msg.has_registered());
    client = std::make_unique<Client>(rs.ClientOpts());
  }
  RunningServer rs;
  zmq::context_t ctx;
  ScriptedExecutor ex;
  std::unique_ptr<Client> client;
};

// Registers `ex` with `slots`, submits `spec` through `client`, and returns
// the job's id, with the executor's first work for it in `*work`.
inline JobId RegisterAndSubmit(ScriptedExecutor& ex, uint32_t slots, Client& client, const wire::JobSpec& spec,
                               wire::SchedulerToExecutor* work) {
  ex.Register(slots);
  REQUIRE(ex.Next(work));  // the acknowledgement
  auto submitted = client.Submit(spec);
  REQUIRE(submitted.ok());
  REQUIRE(ex.Next(work));
  return *submitted;
}

}  // namespace tailcut::server_test
