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

#include "tailcut/cli/command_line.h"
#include "tailcut/common/config.h"
#include "tailcut/common/log.h"
#include "tailcut/common/process.h"
#include "tailcut/common/version.h"
#include "tailcut/executor/executor.h"

namespace {

constexpr int kExitUsage = 2;

// Flags become config overrides, applied in command-line order after the
// file, so "--set slots=4" and "--slots 4" behave identically. `key`:
// the config key; nullptr where the flag is handled by name below.
struct ExecutorFlag {
  tailcut::cli::Flag flag;
  const char* key;
  bool is_string;
};

const std::vector<ExecutorFlag>& ExecutorFlags() {
  using tailcut::cli::Flag;
  static const std::vector<ExecutorFlag> flags = {
      {{"--config", "FILE", "TOML config (see configs/executor.toml)"}, nullptr, true},
      {{"--scheduler", "ENDPOINT",
        "scheduler executor endpoint (default tcp://127.0.0.1:7700); replicas: a comma-separated list, the leader is "
        "found and followed"},
       "scheduler",
       true},
      {{"--slots", "N", "attempts run at once (default: CPU cores)"}, "slots", false},
      {{"--threads", "N", "worker threads (default: hardware concurrency)"}, "threads", false},
      {{"--max-queued", "N", "refuse attempts queued beyond slots + N (default 0: no cap)"}, "max_queued", false},
      {{"--max-output-bytes", "N", "refuse work while N bytes of outputs wait unsent (0: no cap)"},
       "max_output_bytes",
       false},
      {{"--name", "NAME", "executor name (default host:pid)"}, "name", true},
      {{"--label", "K=V", "label offered to tasks; repeatable", "", true}, nullptr, true},
      {{"--key-file", "FILE", "this executor's key pair (tailcut keygen NAME --role executor)"}, "key_file", true},
      {{"--scheduler-key", "KEY",
        "the scheduler's public key: its .pub file or the Z85 key (both or neither; docs/SECURITY.md)"},
       "scheduler_key",
       true},
      {{"--allow-shell", "",
        "also run the shell kernel: any client of the scheduler can then run commands as this user (off by "
        "default); shell, exec and python need --scheduler-key, or else --trust-unauthenticated-scheduler"},
       nullptr,
       false},
      {{"--allow-exec", "",
        "also run the exec kernel: programs from exec_allow only, without a shell (off by default)"},
       nullptr,
       false},
      {{"--allow-python", "",
        "run Python tasks (the python kernel: functions sent by the Python client, docs/PYTHON.md); same trust "
        "rules as --allow-shell"},
       "allow_python",
       false},
      {{"--trust-unauthenticated-scheduler", "",
        "run shell, exec and python for whatever answers on --scheduler (keyless loopback demos and tests only)"},
       "trust_unauthenticated_scheduler",
       false},
      {{"--exec-allow", "LIST",
        "exec_allow: programs or folders (ending in /) the exec kernel may run, comma-separated"},
       "exec_allow",
       true},
      {{"--kernel-plugin", "PATH",
        "load kernels from this shared library (repeatable; after kernel_plugins of the config); they run only "
        "when listed in allow_kernels (docs/KERNELS.md)",
        "", true},
       nullptr,
       true},
      {{"--set", "KEY=VALUE", "override any config key (TOML value); repeatable", "", true}, nullptr, false},
      {{"--log-level", "LEVEL", "debug|info|warn|error|off (default info)"}, "log_level", true},
      {{"--slowdown", "F", "fault injection: every kernel takes F times longer (docs/EXECUTOR.md)"},
       "faults.slowdown",
       false},
      {{"--fail-slow-after", "T", "fault injection: from T seconds after start ..."},
       "faults.fail_slow_after_s",
       false},
      {{"--fail-slow-factor", "F", "... every kernel takes F times longer (again)"}, "faults.fail_slow_factor", false},
      {{"--delay-prob", "P", "fault injection: each attempt, with probability P ..."}, "faults.delay_prob", false},
      {{"--delay-ms", "D", "... runs D ms longer"}, "faults.delay_ms", false},
      {{"--crash-after", "T", "fault injection: exit abruptly (code 137, no Goodbye) after T seconds"},
       "faults.crash_after_s",
       false},
      {{"--fault-seed", "N", "seed for --delay-prob draws"}, "faults.seed", false},
  };
  return flags;
}

int UsageError(const std::string& message) {
  std::fprintf(stderr, "tailcut-executor: %s\n(try --help)\n", message.c_str());
  return kExitUsage;
}

int Run(const tailcut::cli::Args& args) {
  using namespace tailcut;
  const std::string config_path = args.Get("--config");
  std::vector<std::string> overrides;
  const bool allow_shell = args.Has("--allow-shell"), allow_exec = args.Has("--allow-exec");
  const std::vector<std::string> kernel_plugins = args.GetAll("--kernel-plugin");  // after the config's
  for (const auto& [flag, value] : args.InOrder()) {
    if (flag == "--set") {
      overrides.push_back(value);
    } else if (flag == "--label") {
      auto eq = value.find('=');
      if (eq == std::string::npos || eq == 0) return UsageError("--label wants K=V, got '" + value + "'");
      overrides.push_back("labels." + value.substr(0, eq) + "=" + TomlQuote(value.substr(eq + 1)));
    } else {
      for (const ExecutorFlag& f : ExecutorFlags())
        if (f.flag.names == flag && f.key)  // a switch's value is "": true
          overrides.push_back(std::string(f.key) + "=" +
                              (f.flag.value.empty() ? "true"
                               : f.is_string        ? TomlQuote(value)
                                                    : value));
    }
  }

  StatusOr<Config> config = config_path.empty() ? Config::Parse("", "<defaults>") : Config::LoadFile(config_path);
  if (!config.ok()) return UsageError(config.status().message());
  for (const std::string& o : overrides)
    if (Status s = config->Override(o); !s.ok()) return UsageError(s.message());
  for (const std::string& path : kernel_plugins)  // appended to the config's array
    if (Status s = config->Override("kernel_plugins." + std::to_string(config->ArraySize("kernel_plugins")) + "=" +
                                    TomlQuote(path));
        !s.ok())
      return UsageError(s.message());
  std::string level_text = "info";
  if (Status s = config->Get("log_level", &level_text); !s.ok()) return UsageError(s.message());
  LogLevel level;
  if (!ParseLogLevel(level_text, &level)) return UsageError("log level must be debug|info|warn|error|off, got '" + level_text + "'");
  SetLogLevel(level);
  auto options = executor::ExecutorOptionsFromConfig(*config);
  if (!options.ok()) return UsageError(options.status().message());
  auto& allowed = options->allow_kernels;
  for (auto [on, name] : {std::pair{allow_shell, "shell"}, std::pair{allow_exec, "exec"}})
    if (on && std::find(allowed.begin(), allowed.end(), name) == allowed.end()) allowed.push_back(name);
  if (Status s = executor::CheckShellTrust(*options); !s.ok()) return UsageError(s.message());
  if (Status s = config->CheckAllUsed(); !s.ok()) return UsageError(s.message());
  auto kernels = executor::LoadKernelPlugins(*options);
  if (!kernels.ok()) return UsageError(kernels.status().message());

  // Block SIGINT/SIGTERM in every thread; one thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  executor::Executor ex(std::move(options).value(), std::move(kernels).value());
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

}  // namespace

int main(int argc, char** argv) {
  tailcut::TuneAllocatorForMessages();
  tailcut::SetLogComponent("executor");
  std::string defaults;
  for (const std::string& k : tailcut::executor::DefaultAllowedKernels()) defaults += (defaults.empty() ? "" : ",") + k;
  tailcut::cli::Command c;
  c.name = "tailcut-executor";
  c.description =
      "Runs tasks for a tailcut scheduler. Flags override the config file's keys (docs/CONFIG.md), in the order "
      "given.";
  c.footer =
      "kernels run: allow_kernels in the config, comma-separated (default: every built-in but shell and "
      "exec: " +
      defaults + "); their arguments: docs/KERNELS.md";
  for (const ExecutorFlag& f : ExecutorFlags()) c.flags.push_back(f.flag);
  c.run = Run;
  return tailcut::cli::RunProgram(c, argc, argv, tailcut::VersionLine("tailcut-executor"));
}
