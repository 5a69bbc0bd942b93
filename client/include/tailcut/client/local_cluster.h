// A whole cluster on this machine, for the demo, `tailcut train`, the live
// bench, the dispatch benchmark and the end-to-end tests: a scheduler (in
// this process by default, or the tailcut-scheduler daemon as a child) and
// executor daemons as child processes, all on free loopback ports
// (FreeLoopbackPort).
//
//   LocalClusterOptions o;  o.name = "demo";
//   auto cluster = LocalCluster::Start(o, std::move(chain));
//   (*cluster)->AddExecutor({.flags = {"--slots", "2"}});
//   (*cluster)->WaitForExecutors(1, 15);
//   Client c((*cluster)->client_options());
//
// Executors may restart by themselves when they exit (`restart`), as an
// operator's supervisor would restart them. Logs go to one temporary folder,
// removed at the end unless kept (a failed start keeps them).
//
// Thread safety: a watcher thread of its own restarts executors, so the
// executor calls (AddExecutor, ExecutorAlive, SignalExecutor) may come from
// any thread; start, stop and the scheduler calls belong to its owner.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tailcut/client/client.h"
#include "tailcut/common/status.h"
#include "tailcut/core/scheduler_core.h"
#include "tailcut/server/server.h"

namespace tailcut {

struct LocalClusterOptions {
  std::string name = "cluster";      // log folder: /tmp/tailcut-NAME-XXXXXX
  ServerOptions server;              // in-process scheduler; endpoints are replaced
  std::vector<CoreObserver*> observers;  // in-process scheduler: attached before it runs
  // The tailcut-scheduler binary to run as a child process instead, with
  // extra flags (e.g. --policy none, --set core.lost_after_s=1). Its
  // journal (state_dir) is LOGDIR/state, so RestartScheduler() resumes.
  std::string scheduler_binary;
  std::vector<std::string> scheduler_flags;
  // Default: tailcut-executor next to the running binary.
  std::string executor_binary;
  bool keep_logs = false;
  // CURVE keys, made fresh in LOGDIR/keys: the scheduler's, one for the
  // executors, and clients "client", "other" (both role client) and
  // "admin" (docs/SECURITY.md). false: no keys (loopback only anyway).
  bool keys = true;
  // Serve /metrics (docs/METRICS.md) on a free loopback port, read back by
  // http_endpoint(). Off by default: the daemon's default port (7780) would
  // collide between clusters on one machine.
  bool http = false;
};

struct LocalExecutorSpec {
  std::vector<std::string> flags;          // after --scheduler EP
  bool restart = false;                    // start it again whenever it exits
  std::vector<std::string> restart_flags;  // for the restarted one; empty = `flags`
  bool expect_exit = false;                // an exit is planned (fault injection): no warning
  // Runs `shell` tasks (passes --allow-shell; off by default, as for any
  // executor: shell runs whatever command a client sends).
  bool allow_shell = false;
};

class LocalCluster {
 public:
  static StatusOr<std::unique_ptr<LocalCluster>> Start(LocalClusterOptions options, PolicyChain policies = {});
  // Stops the executors (SIGTERM), then the scheduler; removes the logs
  // unless KeepLogs() (then prints where they are).
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  // Spawns an executor; returns its index (0, 1, ...).
  StatusOr<size_t> AddExecutor(LocalExecutorSpec spec);
  // Until `n` executors are registered with the scheduler; on timeout the
  // error names the log folder, which is then kept.
  Status WaitForExecutors(size_t n, double timeout_s);
  bool ExecutorAlive(size_t index);
  // Signals executor `index` (e.g. SIGKILL); a `restart` spec brings it back.
  void SignalExecutor(size_t index, int sig);
  // Executor exits seen so far (restarted or not).
  int executor_exits() const;

  // Child-process scheduler only: signal it (SIGKILL = crash) / start it
  // again on the same ports and flags.
  void SignalScheduler(int sig);
  Status RestartScheduler();
  bool SchedulerAlive();  // in-process: always true
  int scheduler_pid() const;  // the child scheduler's pid (e.g. to read its RSS); 0 in-process

  void KeepLogs();
  const std::string& log_dir() const;
  std::string client_endpoint() const;
  std::string executor_endpoint() const;
  // "127.0.0.1:PORT" of /metrics with LocalClusterOptions::http; else "".
  std::string http_endpoint() const;
  // Options for a client of this cluster, holding key `as` ("client",
  // "other" or "admin") when the cluster has keys.
  ClientOptions client_options(const std::string& as = "client") const;
  // The keys folder ("" without keys): NAME.key / NAME.pub, trusted.toml.
  std::string keys_dir() const;

 private:
  class Impl;
  explicit LocalCluster(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A free TCP port on 127.0.0.1 below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range; the OS's pick when that range starts too
// low to leave room). A child-process scheduler needs its ports before it
// starts and keeps them across restarts, so that executors and clients
// reconnect on their own: the kernel never hands a port below the range to
// an outgoing connection, so a scheduler restarted on it gets it back. One
// in the range did not always: while a killed scheduler was down, any
// connection on the machine could take it (a peer's own reconnection too,
// connected to itself), and the restarted scheduler exited "cannot bind",
// leaving every job of the chaos soak behind it unfinished (issue 43).
int FreeLoopbackPort();
// The first port of the kernel's ephemeral range (32768 when unreadable).
int EphemeralPortsFrom();

}  // namespace tailcut
