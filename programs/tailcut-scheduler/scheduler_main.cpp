// tailcut-scheduler: the scheduler daemon.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tailcut/common/process.h"
#include "tailcut/common/config.h"
#include "tailcut/common/log.h"
#include "tailcut/common/version.h"
#include "daemon_config.h"

namespace {

tailcut::SchedulerServer* g_server = nullptr;
void OnSignal(int sig) {
  if (!g_server) return;
  if (sig == SIGHUP)
    g_server->ReloadTrustedKeys();
  else
    g_server->Stop();
}

const char kUsage[] = R"(usage: tailcut-scheduler [options]

The tailcut scheduler daemon: accepts jobs from clients, dispatches their
tasks to executors, and mitigates stragglers.

options:
  -c, --config FILE          TOML config (see configs/scheduler.toml; every key
                             has a default, so the file is optional)
      --executor-endpoint EP where executors connect (default tcp://127.0.0.1:7700)
      --client-endpoint EP   where clients connect   (default tcp://127.0.0.1:7701);
                             an address beyond loopback needs keys
      --http-listen HOST:PORT  Prometheus /metrics (default 127.0.0.1:7780; ""
                             turns it off; no authentication, docs/METRICS.md)
      --key-file FILE        the scheduler's key pair (tailcut keygen); with it
                             only keys in --trusted-keys may connect
      --trusted-keys FILE    allow-list of public keys (.pub entries); SIGHUP
                             reloads it (docs/SECURITY.md)
      --parent EP            register with a parent scheduler (its executor endpoint,
                             e.g. tcp://HOST:7700) as one executor offering this
                             scheduler's fleet: the edge tier (docs/EDGE.md)
      --parent-key-file FILE this edge's key pair for the parent (role executor)
      --parent-key KEY       the parent's public key: its .pub file or the Z85 key
      --policy CHAIN         mitigation policies, e.g. clone,spark,reassign; "none"
                             turns mitigation off (default "default", see
                             docs/POLICIES.md)
      --set KEY=VALUE        override any config key, e.g. --set core.max_attempts=5
      --log-level LEVEL      debug|info|warn|error|off (default info)
  -h, --help                 this text
      --version              print the version

signals: SIGTERM/SIGINT stop, SIGHUP reloads the trusted keys
exit codes: 0 stopped by SIGTERM/SIGINT, 1 runtime error, 2 bad usage or config
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace tailcut;
  TuneAllocatorForMessages();
  SetLogComponent("scheduler");
  std::string config_path;
  std::vector<std::string> overrides;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tailcut-scheduler: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--version") {
      std::puts(VersionLine("tailcut-scheduler").c_str());
      return 0;
    } else if (a == "-c" || a == "--config") {
      config_path = value("--config");
    } else if (a == "--executor-endpoint") {
      overrides.push_back("scheduler.executor_endpoint=\"" + value("--executor-endpoint") + "\"");
    } else if (a == "--client-endpoint") {
      overrides.push_back("scheduler.client_endpoint=\"" + value("--client-endpoint") + "\"");
    } else if (a == "--http-listen") {
      overrides.push_back("scheduler.http_listen=\"" + value("--http-listen") + "\"");
    } else if (a == "--key-file") {
      overrides.push_back("scheduler.key_file=\"" + value("--key-file") + "\"");
    } else if (a == "--trusted-keys") {
      overrides.push_back("scheduler.trusted_keys=\"" + value("--trusted-keys") + "\"");
    } else if (a == "--parent") {
      overrides.push_back("scheduler.parent=" + TomlQuote(value("--parent")));
    } else if (a == "--parent-key-file") {
      overrides.push_back("scheduler.parent_key_file=" + TomlQuote(value("--parent-key-file")));
    } else if (a == "--parent-key") {
      overrides.push_back("scheduler.parent_key=" + TomlQuote(value("--parent-key")));
    } else if (a == "--policy") {
      overrides.push_back("policies.chain=\"" + value("--policy") + "\"");
    } else if (a == "--set") {
      overrides.push_back(value("--set"));
    } else if (a == "--log-level") {
      overrides.push_back("scheduler.log_level=\"" + value("--log-level") + "\"");
    } else {
      std::fprintf(stderr, "tailcut-scheduler: unknown option '%s' (try --help)\n", a.c_str());
      return 2;
    }
  }
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
  auto policies = LoadDaemonConfig(*cfg, &options);
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
  g_server = &server;
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGHUP, OnSignal);
  server.Run();
  g_server = nullptr;
  return 0;
}
