// tailcut-executor: a thin daemon around tailcut::executor::Executor.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tailcut/common/process.h"
#include "tailcut/common/config.h"
#include "tailcut/common/log.h"
#include "tailcut/common/version.h"
#include "tailcut/executor/executor.h"

namespace {

constexpr int kExitUsage = 2;

const char kUsage[] = R"(usage: tailcut-executor [options]

Runs tasks for a tailcut scheduler.

  --config FILE          TOML config (see configs/executor.toml)
  --scheduler ENDPOINT   scheduler executor endpoint (default tcp://127.0.0.1:7700)
  --slots N              attempts run at once (default: CPU cores)
  --threads N            worker threads (default: hardware concurrency)
  --max-queued N         refuse attempts queued beyond slots + N (default 0: no cap)
  --max-output-bytes N   refuse work while N bytes of outputs wait unsent (0: no cap)
  --name NAME            executor name (default host:pid)
  --label K=V            label offered to tasks; repeatable
  --key-file FILE        this executor's key pair (tailcut keygen NAME --role executor)
  --scheduler-key KEY    the scheduler's public key: its .pub file or the Z85 key
                         (both or neither; docs/SECURITY.md)
  --allow-shell          also run the shell kernel: any client of the scheduler
                         can then run commands as this user (off by default);
                         needs --scheduler-key, or else:
  --trust-unauthenticated-scheduler
                         run shell for whatever answers on --scheduler
                         (keyless loopback demos and tests only)
  --set KEY=VALUE        override any config key (TOML value); repeatable
  --log-level LEVEL      debug|info|warn|error|off (default info)
kernels run: allow_kernels in the config, comma-separated (default: every
built-in but shell: %s)
fault injection (stragglers on demand, see docs/EXECUTOR.md):
  --slowdown F           every kernel takes F times longer
  --fail-slow-after T    from T seconds after start ...
  --fail-slow-factor F   ... every kernel takes F times longer (again)
  --delay-prob P         each attempt, with probability P ...
  --delay-ms D           ... runs D ms longer
  --crash-after T        exit abruptly (code 137, no Goodbye) after T seconds
  --fault-seed N         seed for --delay-prob draws
  --help, --version
)";

int UsageError(const std::string& message) {
  std::fprintf(stderr, "tailcut-executor: %s\n(try --help)\n", message.c_str());
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tailcut;
  TuneAllocatorForMessages();
  SetLogComponent("executor");

  // Flags become config overrides, applied in order after the file, so
  // "--set slots=4" and "--slots 4" behave identically.
  std::string config_path;
  std::vector<std::string> overrides;
  bool allow_shell = false;
  struct Flag {
    const char* name;
    const char* key;
    bool is_string;
  };
  static const Flag kFlags[] = {
      {"--scheduler", "scheduler", true},
      {"--slots", "slots", false},
      {"--threads", "threads", false},
      {"--max-output-bytes", "max_output_bytes", false},
      {"--max-queued", "max_queued", false},
      {"--name", "name", true},
      {"--key-file", "key_file", true},
      {"--scheduler-key", "scheduler_key", true},
      {"--log-level", "log_level", true},
      {"--slowdown", "faults.slowdown", false},
      {"--fail-slow-after", "faults.fail_slow_after_s", false},
      {"--fail-slow-factor", "faults.fail_slow_factor", false},
      {"--delay-prob", "faults.delay_prob", false},
      {"--delay-ms", "faults.delay_ms", false},
      {"--crash-after", "faults.crash_after_s", false},
      {"--fault-seed", "faults.seed", false},
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::string defaults;
      for (const std::string& k : executor::DefaultAllowedKernels()) defaults += (defaults.empty() ? "" : ",") + k;
      std::printf(kUsage, defaults.c_str());
      return 0;
    }
    if (arg == "--version") {
      std::puts(VersionLine("tailcut-executor").c_str());
      return 0;
    }
    if (arg == "--allow-shell") {
      allow_shell = true;
      continue;
    }
    if (arg == "--trust-unauthenticated-scheduler") {
      overrides.push_back("trust_unauthenticated_scheduler=true");
      continue;
    }
    if (arg == "--allow-python") {
      overrides.push_back("allow_python=true");
      continue;
    }
    const std::string name = arg.substr(0, arg.find('='));
    const Flag* flag = nullptr;
    for (const Flag& f : kFlags)
      if (name == f.name) flag = &f;
    if (!flag && name != "--config" && name != "--set" && name != "--label")
      return UsageError("unknown option " + arg);
    std::string value;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);  // --flag=value
      arg = arg.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return UsageError("missing value for " + arg);
    }
    if (arg == "--config") {
      config_path = value;
    } else if (arg == "--set") {
      overrides.push_back(value);
    } else if (arg == "--label") {
      auto eq = value.find('=');
      if (eq == std::string::npos || eq == 0) return UsageError("--label wants K=V, got '" + value + "'");
      overrides.push_back("labels." + value.substr(0, eq) + "=" + TomlQuote(value.substr(eq + 1)));
    } else {
      overrides.push_back(std::string(flag->key) + "=" + (flag->is_string ? TomlQuote(value) : value));
    }
  }

  StatusOr<Config> config = config_path.empty() ? Config::Parse("", "<defaults>") : Config::LoadFile(config_path);
  if (!config.ok()) return UsageError(config.status().message());
  for (const std::string& o : overrides)
    if (Status s = config->Override(o); !s.ok()) return UsageError(s.message());
  std::string level_text = "info";
  if (Status s = config->Get("log_level", &level_text); !s.ok()) return UsageError(s.message());
  LogLevel level;
  if (!ParseLogLevel(level_text, &level)) return UsageError("log level must be debug|info|warn|error|off, got '" + level_text + "'");
  SetLogLevel(level);
  auto options = executor::ExecutorOptionsFromConfig(*config);
  if (!options.ok()) return UsageError(options.status().message());
  auto& allowed = options->allow_kernels;
  if (allow_shell && std::find(allowed.begin(), allowed.end(), "shell") == allowed.end()) allowed.push_back("shell");
  if (Status s = executor::CheckShellTrust(*options); !s.ok()) return UsageError(s.message());
  if (Status s = config->CheckAllUsed(); !s.ok()) return UsageError(s.message());

  // Block SIGINT/SIGTERM in every thread; one thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  executor::Executor ex(std::move(options).value());
  std::atomic<bool> finished{false};
  std::thread signal_waiter([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (finished.load()) return;
    TC_LOG(Info) << "got " << strsignal(sig) << "; saying goodbye";
    ex.Stop();
  });
  Status run = ex.Run();
  finished.store(true);
  kill(getpid(), SIGTERM);  // releases the waiter if no signal came
  signal_waiter.join();
  if (!run.ok()) {
    TC_LOG(Error) << run.message();
    return 1;
  }
  return 0;
}
