// A whole cluster on this machine: the scheduler in this process, executor
// daemons as child processes. Used by `tailcut demo` and `tailcut train`.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tailcut/common/status.h"
#include "tailcut/scheduler/server.h"

namespace tailcut::cli {

class LocalCluster {
 public:
  // Binds the scheduler on loopback (ports chosen by the OS) and runs it.
  // `name` prefixes the temporary log folder: /tmp/tailcut-NAME-XXXXXX.
  static StatusOr<std::unique_ptr<LocalCluster>> Start(ServerOptions options, PolicyChain policies,
                                                       const std::string& name);
  // SIGTERM to every executor, wait for them, stop the scheduler, remove
  // the logs unless KeepLogs() was called (then their folder is printed).
  ~LocalCluster();

  // Spawns `executor_binary --scheduler EP flags...`, logging to
  // LOGDIR/executor-N.log.
  void AddExecutor(const std::string& executor_binary, const std::vector<std::string>& flags);
  void KeepLogs() { keep_logs_ = true; }
  const std::string& log_dir() const { return log_dir_; }
  std::string client_endpoint() const { return server_->client_endpoint(); }
  std::string executor_endpoint() const { return server_->executor_endpoint(); }

 private:
  explicit LocalCluster(std::unique_ptr<SchedulerServer> server);
  std::unique_ptr<SchedulerServer> server_;
  std::thread loop_;
  std::string log_dir_;
  std::vector<pid_t> pids_;
  bool keep_logs_ = false;
};

}  // namespace tailcut::cli
