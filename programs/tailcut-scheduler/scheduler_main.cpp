// tailcut-scheduler: the scheduler daemon.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "daemon_config.h"
#include "tailcut/cli/command_line.h"
#include "tailcut/common/config.h"
#include "tailcut/common/log.h"
#include "tailcut/common/process.h"
#include "tailcut/common/version.h"

#ifdef TAILCUT_TEST_FAULTS
// Only in the tests' build of this daemon (tailcut-scheduler-faults,
// tests/integration/fault_hooks.cpp; docs/RELIABILITY.md, "Faults on
// purpose"): never compiled into tailcut-scheduler.
void InstallTestFaults(tailcut::SchedulerServer& server);
#endif

namespace {

tailcut::SchedulerServer* g_server = nullptr;
void OnSignal(int sig) {
  if (!g_server) return;
  if (sig == SIGHUP)
    g_server->ReloadTrustedKeys();
  else
    g_server->Stop();
}

// Each flag is a config override (KEY, and whether its value is quoted),
// applied after the config file in command-line order: "--set
// scheduler.client_endpoint=..." and "--client-endpoint ..." are the same.
struct DaemonFlag {
  tailcut::cli::Flag flag;
  const char* key;     // nullptr: --set, whose value is KEY=VALUE itself
  bool quoted = true;  // the value is a string (else TOML as given: a number)
};

const std::vector<DaemonFlag>& DaemonFlags() {
  static const std::vector<DaemonFlag> flags = {
      {{"--executor-endpoint", "EP", "where executors connect (default tcp://127.0.0.1:7700)"},
       "scheduler.executor_endpoint"},
      {{"--client-endpoint", "EP",
        "where clients connect (default tcp://127.0.0.1:7701); an address beyond loopback needs keys"},
       "scheduler.client_endpoint"},
      {{"--http-listen", "HOST:PORT",
        "Prometheus /metrics (default 127.0.0.1:7780; \"\" turns it off; no authentication, docs/METRICS.md)"},
       "scheduler.http_listen"},
      {{"--key-file", "FILE",
        "the scheduler's key pair (tailcut keygen); with it only keys in --trusted-keys may connect"},
       "scheduler.key_file"},
      {{"--trusted-keys", "FILE", "allow-list of public keys (.pub entries); SIGHUP reloads it (docs/SECURITY.md)"},
       "scheduler.trusted_keys"},
      {{"--parent", "EP",
        "register with a parent scheduler (its executor endpoint, e.g. tcp://HOST:7700) as one executor offering "
        "this scheduler's fleet: the edge tier (docs/EDGE.md)"},
       "scheduler.parent"},
      {{"--parent-key-file", "FILE", "this edge's key pair for the parent (role executor)"},
       "scheduler.parent_key_file"},
      {{"--parent-key", "KEY", "the parent's public key: its .pub file or the Z85 key"}, "scheduler.parent_key"},
      {{"--policy", "CHAIN",
        "mitigation policies, e.g. clone,spark,reassign; \"none\" turns mitigation off (default \"default\", see "
        "docs/POLICIES.md)"},
       "policies.chain"},
      {{"--set", "KEY=VALUE", "override any config key, e.g. --set core.max_attempts=5; repeatable", "", true},
       nullptr},
      {{"--log-level", "LEVEL", "debug|info|warn|error|off (default info)"}, "scheduler.log_level"},
      {{"--replica-id", "N",
        "this replica's id among the peers of --replicas or [replicas] (docs/RELIABILITY.md, \"Replicas\")"},
       "replicas.id",
       false},
  };
  return flags;
}

int Run(const tailcut::cli::Args& args) {
  using namespace tailcut;
  const std::string config_path = args.Get("--config");
  std::vector<std::string> overrides;
  for (const auto& [flag, value] : args.InOrder())
    for (const DaemonFlag& f : DaemonFlags())
      if (f.flag.names == flag)
        overrides.push_back(f.key ? std::string(f.key) + "=" + (f.quoted ? TomlQuote(value) : value) : value);
  auto cfg = config_path.empty() ? Config::Parse("", "<defaults>") : Config::LoadFile(config_path);
  if (!cfg.ok()) {
    std::fprintf(stderr, "tailcut-scheduler: %s\n", cfg.status().message().c_str());
    return 2;
  }
  for (const auto& o : overrides) {
    if (Status s = cfg->Override(o); !s.ok()) {
      std::fprintf(stderr, "tailcut-scheduler: %s\n", s.message().c_str());
      return 2;
    }
  }
  std::string level = "info";
  LogLevel lv;
  if (Status s = cfg->Get("scheduler.log_level", &level); !s.ok() || !ParseLogLevel(level, &lv)) {
    std::fprintf(stderr, "tailcut-scheduler: scheduler.log_level must be debug|info|warn|error|off\n");
    return 2;
  }
  SetLogLevel(lv);
  ServerOptions options;
  auto policies = LoadDaemonConfig(*cfg, &options, args.Get("--replicas"));
  if (!policies.ok()) {
    std::fprintf(stderr, "tailcut-scheduler: %s\n", policies.status().message().c_str());
    return 2;
  }
  std::string names;
  for (auto& p : *policies) names += (names.empty() ? "" : ",") + std::string(p->name());
  TC_LOG(Info) << "mitigation policies: " << (names.empty() ? "none" : names);
  SchedulerServer server(options, std::move(policies).value());
  if (Status b = server.Bind(); !b.ok()) {
    std::fprintf(stderr, "tailcut-scheduler: %s\n", b.message().c_str());
    // A setting that cannot work (a wide bind without keys, a bad key file)
    // is bad config, 2; a port taken or a journal in use is a failure, 1.
    return b.code() == Status::Code::kInvalidArgument ? 2 : 1;
  }
#ifdef TAILCUT_TEST_FAULTS
  InstallTestFaults(server);
#endif
  g_server = &server;
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGHUP, OnSignal);
  server.Run();
  g_server = nullptr;
  if (server.deposed()) {
    std::fprintf(stderr, "tailcut-scheduler: this replica lost its leadership and exits to rejoin as a follower\n");
    return 3;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tailcut::TuneAllocatorForMessages();
  tailcut::SetLogComponent("scheduler");
  tailcut::cli::Command c;
  c.name = "tailcut-scheduler";
  c.description =
      "The tailcut scheduler daemon: accepts jobs from clients, dispatches their tasks to executors, and mitigates "
      "stragglers. Flags override the config file's keys (docs/CONFIG.md), in the order given.";
  c.footer =
      "signals: SIGTERM/SIGINT stop, SIGHUP reloads the trusted keys\nexit codes: 0 stopped by SIGTERM/SIGINT, 1 "
      "runtime error, 2 bad usage or config, 3 a replica that lost its leadership (restart it: it rejoins as a "
      "follower)";
  c.flags = {{"-c,--config", "FILE",
              "TOML config (see configs/scheduler.toml; every key has a default, so the file is optional)"},
             {"--replicas", "FILE",
              "the replica group's [replicas] table (peers, key_file), the same file on every replica; with "
              "--replica-id (docs/RELIABILITY.md, \"Replicas\")"}};
  for (const DaemonFlag& f : DaemonFlags()) c.flags.push_back(f.flag);
  c.run = Run;
  return tailcut::cli::RunProgram(c, argc, argv, tailcut::VersionLine("tailcut-scheduler"));
}
