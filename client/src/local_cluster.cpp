#include <algorithm>
#include "tailcut/client/local_cluster.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "tailcut/common/process.h"
#include "tailcut/common/thread_annotations.h"
#include "tailcut/wire/security.h"

namespace tailcut {
namespace {

// Whether nothing holds TCP `port` on 127.0.0.1 (0: the OS picks one);
// returns the port, or -1.
int TryLoopbackPort(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof a;
  int got = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    got = ntohs(a.sin_port);
  close(fd);
  return got;
}

}  // namespace

int EphemeralPortsFrom() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int lo = 0, hi = 0;
  return in >> lo >> hi && lo > 0 ? lo : 32768;  // Linux's default when unreadable
}

int FreeLoopbackPort() {
  // At least this many ports below the ephemeral range to pick from, else
  // the OS picks (a range that starts this low leaves no room).
  constexpr int kMinSpan = 4096, kMaxSpan = 20000, kTries = 256;
  const int lo = EphemeralPortsFrom();
  const int span = std::min(kMaxSpan, lo - 1024);
  if (span >= kMinSpan) {
    std::mt19937 rng(static_cast<unsigned>(std::random_device{}()) ^ static_cast<unsigned>(getpid()));
    for (int i = 0; i < kTries; ++i)
      if (int port = TryLoopbackPort(lo - 1 - static_cast<int>(rng() % static_cast<unsigned>(span))); port > 0)
        return port;
  }
  return TryLoopbackPort(0);
}

namespace {

// The last `lines` lines of the file at `path`, each on its own indented
// line ("" if it cannot be read): a failed wait quotes them, so a CI log
// says why without the folder it names.
std::string LogTail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::deque<std::string> tail;
  for (std::string line; std::getline(in, line);) {
    tail.push_back(std::move(line));
    if (tail.size() > lines) tail.pop_front();
  }
  std::string out;
  for (const auto& l : tail) out += "\n  | " + l;
  return out;
}

// Whether something listens on 127.0.0.1 at every one of `ports`, read
// from /proc/net/tcp once (a probe's own bind or connect would disturb the
// daemon it looks for); true where that cannot be read, so the caller does
// not wait in vain.
bool LoopbackListening(const std::vector<int>& ports) {
  std::ifstream in("/proc/net/tcp");
  if (!in) return true;
  std::set<int> listening;
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (state == "0A" && local.rfind("0100007F:", 0) == 0)  // 0A: LISTEN, on 127.0.0.1
      listening.insert(std::stoi(local.substr(9), nullptr, 16));
  }
  return std::all_of(ports.begin(), ports.end(), [&](int p) { return listening.count(p) > 0; });
}

struct LocalExecutor {
  LocalExecutorSpec spec;
  ChildProcess process;
  int starts = 0;
};

}  // namespace

class LocalCluster::Impl {
 public:
  explicit Impl(LocalClusterOptions o) : opt_(std::move(o)) {}

  Status Start(PolicyChain policies) {
    std::string tmpl = (std::filesystem::temp_directory_path() / ("tailcut-" + opt_.name + "-XXXXXX")).string();
    if (!mkdtemp(tmpl.data())) return Status::IoError("cannot create a log folder like " + tmpl);
    log_dir_ = tmpl;
    if (opt_.executor_binary.empty()) opt_.executor_binary = (ExecutableDir() / "tailcut-executor").string();
    if (!std::filesystem::exists(opt_.executor_binary))
      return Status::InvalidArgument(opt_.executor_binary + " not found (build tailcut-executor: cmake --build build)");
    if (opt_.keys) {
      if (Status s = MakeKeys(); !s.ok()) return s;
    }
    if (opt_.scheduler_binary.empty()) {
      ServerOptions so = opt_.server;
      if (opt_.keys) {
        so.key_file = keys_dir_ + "/scheduler.key";
        so.trusted_keys = keys_dir_ + "/trusted.toml";
      }
      so.executor_endpoint = "tcp://127.0.0.1:*";
      so.client_endpoint = "tcp://127.0.0.1:*";
      so.http_listen = opt_.http ? "127.0.0.1:0" : "";
      server_ = std::make_unique<SchedulerServer>(std::move(so), std::move(policies));
      for (CoreObserver* o : opt_.observers) server_->AddObserver(o);
      if (Status s = server_->Bind(); !s.ok()) return s;
      executor_ep_ = server_->executor_endpoint();
      client_ep_ = server_->client_endpoint();
      http_ep_ = server_->http_endpoint();
      loop_ = std::thread([this] { server_->Run(); });
    } else if (Status s = StartSchedulerProcess(); !s.ok()) {
      return s;
    }
    watch_ = std::thread([this] { Watch(); });
    return Status::Ok();
  }

  ~Impl() {
    stop_ = true;
    if (watch_.joinable()) watch_.join();
    {
      MutexLock lock(mu_);
      for (auto& e : executors_) kill_if_running(e->process, SIGTERM);
      for (auto& e : executors_) e->process.Stop(SIGTERM);
    }
    if (server_) {
      server_->Stop();
      if (loop_.joinable()) loop_.join();
    }
    scheduler_.Stop(SIGTERM);
    if (log_dir_.empty()) return;
    if (keep_logs_) {
      std::fprintf(stderr, "logs: %s\n", log_dir_.c_str());
    } else {
      std::error_code ec;
      std::filesystem::remove_all(log_dir_, ec);
    }
  }

  StatusOr<size_t> AddExecutor(LocalExecutorSpec spec) {
    MutexLock lock(mu_);
    auto e = std::make_unique<LocalExecutor>();
    e->spec = std::move(spec);
    size_t index = executors_.size();
    if (!SpawnExecutor(index, *e)) return Status::Internal("cannot start " + opt_.executor_binary);
    executors_.push_back(std::move(e));
    return index;
  }

  Status WaitForExecutors(size_t n, double timeout_s) {
    Client c(client_options("client"));
    auto t0 = std::chrono::steady_clock::now();
    size_t seen = 0;
    const bool tty = isatty(STDERR_FILENO);
    auto clear_line = [&] {
      if (tty) std::fprintf(stderr, "\r%-50s\r", "");
    };
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < timeout_s) {
      if (!server_ && !scheduler_.Alive()) {  // no use waiting the whole timeout
        clear_line();
        return WaitFailed("the scheduler exited (wait status " + std::to_string(scheduler_.exit_status()) + ") with " +
                          std::to_string(seen) + " of " + std::to_string(n) + " executors registered");
      }
      auto list = c.Executors();
      if (list.ok()) {
        seen = list->size();
        if (seen >= n) {
          clear_line();
          return Status::Ok();
        }
      }
      if (tty) std::fprintf(stderr, "\rwaiting for executors: %zu/%zu registered", seen, n);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    clear_line();
    return WaitFailed(std::to_string(seen) + " of " + std::to_string(n) + " executors registered within " +
                      std::to_string(static_cast<int>(timeout_s)) + " s");
  }

  // `what`, where the logs are kept, and how the scheduler's and the first
  // executors' logs end.
  Status WaitFailed(const std::string& what) {
    keep_logs_ = true;
    std::string msg = what + "; logs in " + log_dir_;
    if (!server_) msg += "\nscheduler.log ends:" + LogTail(log_dir_ + "/scheduler.log", 12);
    MutexLock lock(mu_);
    for (size_t i = 0; i < std::min<size_t>(executors_.size(), 2); ++i) {
      msg += "\nexecutor " + std::to_string(i + 1) + (executors_[i]->process.Alive() ? " (running)" : " (exited)") +
             ", its log ends:" + LogTail(ExecutorLog(i), 6);
    }
    return Status::Unavailable(msg);
  }

  bool ExecutorAlive(size_t i) {
    MutexLock lock(mu_);
    return i < executors_.size() && executors_[i]->process.Alive();
  }
  void SignalExecutor(size_t i, int sig) {
    MutexLock lock(mu_);
    if (i < executors_.size()) kill_if_running(executors_[i]->process, sig);
  }
  int executor_exits() const { return exits_.load(); }

  void SignalScheduler(int sig) { kill_if_running(scheduler_, sig); }
  bool SchedulerAlive() { return server_ || scheduler_.Alive(); }
  int scheduler_pid() const { return server_ ? 0 : scheduler_.pid(); }
  Status RestartScheduler() {
    if (opt_.scheduler_binary.empty()) return Status::FailedPrecondition("the scheduler runs in this process");
    scheduler_.Stop(SIGTERM);
    return SpawnScheduler();
  }

  LocalClusterOptions opt_;
  std::string log_dir_, executor_ep_, client_ep_, http_ep_;  // http_ep_: "" without LocalClusterOptions::http
  std::atomic<bool> keep_logs_{false};

  ClientOptions client_options(const std::string& as) const {
    ClientOptions co;
    co.endpoint = client_ep_;
    if (!keys_dir_.empty()) {
      co.key_file = keys_dir_ + "/" + as + ".key";
      co.scheduler_key = keys_dir_ + "/scheduler.pub";
    }
    return co;
  }
  std::string keys_dir_;

 private:
  static void kill_if_running(ChildProcess& p, int sig) {
    if (p.pid() > 0) kill(p.pid(), sig);
  }

  // Every key this cluster uses, and the allow-list of all but the
  // scheduler's own.
  Status MakeKeys() {
    keys_dir_ = log_dir_ + "/keys";
    std::error_code ec;
    std::filesystem::create_directory(keys_dir_, ec);
    if (ec) return Status::IoError("cannot create " + keys_dir_ + ": " + ec.message());
    std::string trusted;
    for (auto [name, role] : {std::pair{"scheduler", PeerRole::kAdmin}, {"executor", PeerRole::kExecutor},
                              {"client", PeerRole::kClient}, {"other", PeerRole::kClient}, {"admin", PeerRole::kAdmin}}) {
      auto key = GenerateKeyPair(name, role);
      if (!key.ok()) return key.status();
      if (Status s = WriteKeyFiles(keys_dir_ + "/" + name, *key); !s.ok()) return s;
      if (std::string_view(name) != "scheduler") trusted += PublicKeyEntry(*key);
    }
    std::ofstream out(keys_dir_ + "/trusted.toml");
    out << trusted;
    return out.flush() ? Status::Ok() : Status::IoError("cannot write " + keys_dir_ + "/trusted.toml");
  }

  // Picks free ports and starts the scheduler on them, then waits until it
  // listens on all of them. A port is free when picked and bound only later,
  // so another process may take it in between: a scheduler that exits for a
  // port in use is started again on new ones; one that exits for anything
  // else fails the start with its log, instead of a wait for executors.
  Status StartSchedulerProcess() {
    constexpr int kTries = 4;
    for (int attempt = 1;; ++attempt) {
      std::vector<int> ports;
      for (int i = 0; i < (opt_.http ? 3 : 2); ++i) {
        ports.push_back(FreeLoopbackPort());
        if (ports.back() < 0) return Status::IoError("no free loopback port");
      }
      executor_ep_ = "tcp://127.0.0.1:" + std::to_string(ports[0]);
      client_ep_ = "tcp://127.0.0.1:" + std::to_string(ports[1]);
      if (opt_.http) http_ep_ = "127.0.0.1:" + std::to_string(ports[2]);
      if (Status s = SpawnScheduler(); !s.ok()) return s;
      const auto t0 = std::chrono::steady_clock::now();
      while (scheduler_.Alive()) {
        if (LoopbackListening(ports)) return Status::Ok();
        if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(30)) return Status::Ok();  // slow, not dead
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      const std::string tail = LogTail(log_dir_ + "/scheduler.log", 12);
      if (tail.find("in use") != std::string::npos && attempt < kTries) continue;
      keep_logs_ = true;
      return Status::Unavailable("the scheduler exited at start (wait status " +
                                 std::to_string(scheduler_.exit_status()) + "); logs in " + log_dir_ +
                                 "\nscheduler.log ends:" + tail);
    }
  }

  std::string ExecutorLog(size_t index) const { return log_dir_ + "/executor-" + std::to_string(index + 1) + ".log"; }

  Status SpawnScheduler() {
    // Its journal lives with the logs: a restarted scheduler resumes from it
    // (scheduler_flags may point it elsewhere: later --set wins).
    std::vector<std::string> argv = {opt_.scheduler_binary, "--executor-endpoint", executor_ep_, "--client-endpoint",
                                     client_ep_, "--set", "scheduler.state_dir=\"" + log_dir_ + "/state\"",
                                     "--http-listen", http_ep_};
    if (!keys_dir_.empty())
      argv.insert(argv.end(), {"--key-file", keys_dir_ + "/scheduler.key", "--trusted-keys", keys_dir_ + "/trusted.toml"});
    argv.insert(argv.end(), opt_.scheduler_flags.begin(), opt_.scheduler_flags.end());
    scheduler_ = ChildProcess(argv, log_dir_ + "/scheduler.log", /*append=*/scheduler_starts_++ > 0);
    if (!scheduler_.started()) return Status::Internal("cannot start " + opt_.scheduler_binary);
    return Status::Ok();
  }

  bool SpawnExecutor(size_t index, LocalExecutor& e) TC_REQUIRES(mu_) {
    const auto& extra = e.starts > 0 && !e.spec.restart_flags.empty() ? e.spec.restart_flags : e.spec.flags;
    std::vector<std::string> argv = {opt_.executor_binary, "--scheduler", executor_ep_};
    if (!keys_dir_.empty())
      argv.insert(argv.end(), {"--key-file", keys_dir_ + "/executor.key", "--scheduler-key", keys_dir_ + "/scheduler.pub"});
    argv.insert(argv.end(), extra.begin(), extra.end());
    if (e.spec.allow_shell) argv.push_back("--allow-shell");
    // Keyless, the executor cannot authenticate its scheduler: on loopback,
    // in a cluster this process made, that is the intent.
    // Any kernel that runs user code (shell, exec, python) needs this.
    const bool runs_code = std::any_of(argv.begin(), argv.end(), [](const std::string& a) {
      return a == "--allow-shell" || a == "--allow-exec" || a == "--allow-python";
    });
    if (runs_code && keys_dir_.empty()) argv.push_back("--trust-unauthenticated-scheduler");
    e.process = ChildProcess(argv, ExecutorLog(index), /*append=*/e.starts > 0);
    e.starts++;
    return e.process.started();
  }

  // Reaps executors that exited and restarts those that asked for it.
  void Watch() {
    while (!stop_) {
      {
        MutexLock lock(mu_);
        for (size_t i = 0; i < executors_.size(); ++i) {
          LocalExecutor& e = *executors_[i];
          if (e.process.pid() <= 0 || e.process.Alive()) continue;
          exits_++;
          if (!e.spec.expect_exit && !e.spec.restart)
            std::fprintf(stderr, "local cluster: executor %zu exited unexpectedly (logs in %s)\n", i + 1,
                         log_dir_.c_str());
          if (e.spec.restart && !SpawnExecutor(i, e))
            std::fprintf(stderr, "local cluster: cannot restart executor %zu\n", i + 1);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  std::unique_ptr<SchedulerServer> server_;
  std::thread loop_, watch_;
  ChildProcess scheduler_;
  int scheduler_starts_ = 0;
  Mutex mu_;  // the executors: the watch thread restarts them while the owner adds or signals them
  std::vector<std::unique_ptr<LocalExecutor>> executors_ TC_GUARDED_BY(mu_);
  std::atomic<bool> stop_{false};
  std::atomic<int> exits_{0};
};

StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(LocalClusterOptions options, PolicyChain policies) {
  auto impl = std::make_unique<Impl>(std::move(options));
  if (Status s = impl->Start(std::move(policies)); !s.ok()) return s;
  return std::unique_ptr<LocalCluster>(new LocalCluster(std::move(impl)));
}

LocalCluster::LocalCluster(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LocalCluster::~LocalCluster() = default;

StatusOr<size_t> LocalCluster::AddExecutor(LocalExecutorSpec spec) { return impl_->AddExecutor(std::move(spec)); }
Status LocalCluster::WaitForExecutors(size_t n, double timeout_s) { return impl_->WaitForExecutors(n, timeout_s); }
bool LocalCluster::ExecutorAlive(size_t index) { return impl_->ExecutorAlive(index); }
void LocalCluster::SignalExecutor(size_t index, int sig) { impl_->SignalExecutor(index, sig); }
int LocalCluster::executor_exits() const { return impl_->executor_exits(); }
void LocalCluster::SignalScheduler(int sig) { impl_->SignalScheduler(sig); }
int LocalCluster::scheduler_pid() const { return impl_->scheduler_pid(); }
Status LocalCluster::RestartScheduler() { return impl_->RestartScheduler(); }
bool LocalCluster::SchedulerAlive() { return impl_->SchedulerAlive(); }
void LocalCluster::KeepLogs() { impl_->keep_logs_ = true; }
const std::string& LocalCluster::log_dir() const { return impl_->log_dir_; }
std::string LocalCluster::client_endpoint() const { return impl_->client_ep_; }
std::string LocalCluster::http_endpoint() const { return impl_->http_ep_; }
std::string LocalCluster::executor_endpoint() const { return impl_->executor_ep_; }
ClientOptions LocalCluster::client_options(const std::string& as) const { return impl_->client_options(as); }
std::string LocalCluster::keys_dir() const { return impl_->keys_dir_; }

}  // namespace tailcut
