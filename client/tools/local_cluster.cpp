#include "local_cluster.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "tailcut/common/process.h"

namespace tailcut::cli {

StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(ServerOptions options, PolicyChain policies,
                                                            const std::string& name) {
  options.executor_endpoint = "tcp://127.0.0.1:*";
  options.client_endpoint = "tcp://127.0.0.1:*";
  auto server = std::make_unique<SchedulerServer>(std::move(options), std::move(policies));
  if (Status s = server->Bind(); !s.ok()) return s;
  std::unique_ptr<LocalCluster> cluster(new LocalCluster(std::move(server)));
  std::string tmpl = "/tmp/tailcut-" + name + "-XXXXXX";
  cluster->log_dir_ = mkdtemp(tmpl.data()) ? tmpl : "/tmp";
  return cluster;
}

LocalCluster::LocalCluster(std::unique_ptr<SchedulerServer> server) : server_(std::move(server)) {
  loop_ = std::thread([this] { server_->Run(); });
}

LocalCluster::~LocalCluster() {
  for (pid_t p : pids_)
    if (p > 0) kill(p, SIGTERM);
  for (pid_t p : pids_)
    if (p > 0) waitpid(p, nullptr, 0);
  server_->Stop();
  loop_.join();
  if (keep_logs_) {
    std::printf("executor logs: %s\n", log_dir_.c_str());
  } else {
    std::error_code ec;
    std::filesystem::remove_all(log_dir_, ec);
  }
}

void LocalCluster::AddExecutor(const std::string& executor_binary, const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {executor_binary, "--scheduler", server_->executor_endpoint()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  pids_.push_back(SpawnProcess(argv, log_dir_ + "/executor-" + std::to_string(pids_.size() + 1) + ".log"));
}

}  // namespace tailcut::cli
