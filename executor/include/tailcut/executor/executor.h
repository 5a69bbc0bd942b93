// The executor: registers with the scheduler over ZeroMQ, runs the attempts
// it is given on an AttemptRuntime and reports back in batches. The daemon
// (tailcut-executor) is a thin main() around this; tests run it in-process.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tailcut/common/config.h"
#include "tailcut/common/status.h"
#include "tailcut/executor/faults.h"
#include "tailcut/executor/kernel.h"
#include "tailcut/executor/python.h"

namespace tailcut::executor {

inline constexpr const char* kDefaultSchedulerEndpoint = "tcp://127.0.0.1:7700";

struct ExecutorOptions {
  std::string scheduler = kDefaultSchedulerEndpoint;
  std::string name;                    // empty: "host:pid"
  uint32_t slots = 0;                  // 0: number of CPU cores
  uint32_t threads = 0;                // 0: hardware concurrency
  uint32_t heartbeat_ms = 1000;        // until RegisterAck says otherwise
  uint32_t lost_after_ms = 0;          // 0: RegisterAck's, else 10 heartbeats
  uint32_t register_retry_ms = 1000;   // Register resend while unacknowledged
  uint32_t goodbye_linger_ms = 200;    // max wait to flush Goodbye at exit
  // Caps for small devices (docs/EXECUTOR.md), 0 = none. Work over a cap is
  // refused (AttemptResult REFUSED: the scheduler places it again, not a
  // task failure); an output that alone exceeds max_output_bytes FAILS.
  uint64_t max_output_bytes = 0;       // outputs held: finished, not yet sent
  uint32_t max_queued = 0;             // attempts waiting beyond the slots
  // ZMQ_MAXMSGSIZE of the socket, and what one Report or Register may
  // carry: outputs held unsent stay under half of it even with
  // max_output_bytes = 0 (a larger output fails, like one over
  // max_output_bytes). Keep it at most the scheduler's max_message_bytes:
  // the scheduler drops the connection of an executor sending more.
  uint64_t max_message_bytes = 64u << 20;
  std::map<std::string, std::string> labels;
  // What its attempts' memory requests (Resources.memory_mb) may add up to,
  // MiB, sent in Register.memory_mb; 0: the machine's (MachineMemoryMb).
  uint64_t memory_mb = 0;
  // A test aid: declare this many GPU devices (0..n-1) instead of detecting
  // them, so GPU placement and CUDA_VISIBLE_DEVICES can be tested without a
  // GPU (docs/GPU.md, "Fake devices"). 0: detect.
  uint32_t fake_gpus = 0;
  // Keys (docs/SECURITY.md): this executor's .key file (role executor) and
  // the scheduler's public key (its .pub file, or the key itself). Both or
  // neither; with them the connection is encrypted and both ends proven.
  std::string key_file;
  std::string scheduler_key;
  // The kernels this executor runs and registers with the scheduler, names
  // from its KernelRegistry (Run fails on an unknown one). Kernels are
  // opt-in: `shell` only when listed (the daemon's --allow-shell adds it).
  std::vector<std::string> allow_kernels = DefaultAllowedKernels();
  // Kernel plugins (shared libraries, kernel_plugin_api.h) whose kernels
  // join the registry; they run only when allow_kernels lists them. The
  // Executor does not open them itself: pass LoadKernelPlugins(options) as
  // its registry, as the daemon does.
  std::vector<std::string> kernel_plugins;
  // `shell` runs whatever the scheduler sends: without scheduler_key anyone
  // answering on the endpoint is "the scheduler", so ExecutorOptionsFromConfig
  // refuses shell without a key unless this is set
  // (--trust-unauthenticated-scheduler: loopback demos and tests).
  bool trust_unauthenticated_scheduler = false;
  // The python kernel (allow_python, python, python_* keys): with
  // python.allow, `python` joins allow_kernels and Register carries the
  // interpreter's version (docs/PYTHON.md, "Python functions").
  PythonOptions python;
  // The exec kernel's allow-list, limits and scratch folders (exec_allow,
  // exec_cpu_s, exec_memory_mb, scratch_dir; docs/CONFIG.md).
  ExecOptions exec;
  FaultOptions faults;
};

// InvalidArgument when `o` runs shell without scheduler_key and without
// trust_unauthenticated_scheduler (ExecutorOptionsFromConfig checks it too).
Status CheckShellTrust(const ExecutorOptions& o);

// Reads the keys documented in configs/executor.toml. Unknown keys are left
// unread; call config.CheckAllUsed() afterwards to reject them.
StatusOr<ExecutorOptions> ExecutorOptionsFromConfig(const Config& config);

// `kernels` plus the kernels of options.kernel_plugins, restricted to
// options.allow_kernels: an unloadable plugin or an unknown allowed name is
// an error naming it.
StatusOr<KernelRegistry> LoadKernelPlugins(const ExecutorOptions& options, KernelRegistry kernels);
// The same over the built-ins, configured by options.exec.
inline StatusOr<KernelRegistry> LoadKernelPlugins(const ExecutorOptions& options) {
  return LoadKernelPlugins(options, BuiltinKernels(options.exec));
}

// Fills 0/empty fields with machine defaults (cores, host:pid, memory).
ExecutorOptions ResolveDefaults(ExecutorOptions options);
// Physical memory in MiB (MemTotal), or the cgroup's memory.max when that
// is lower (an executor in a container); 0 when neither can be read.
uint64_t MachineMemoryMb();

class Executor {
 public:
  // The built-in kernels, exec with options.exec.
  explicit Executor(ExecutorOptions options);
  Executor(ExecutorOptions options, KernelRegistry kernels);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Connects and serves until Stop(); then says Goodbye and returns. Errors
  // only for setup failures (bad endpoint, socket errors).
  Status Run();
  // Thread-safe and async-signal-safe: Run() returns soon after.
  void Stop();

  const ExecutorOptions& options() const { return options_; }

 private:
  class Loop;
  void Wake();
  ExecutorOptions options_;
  KernelRegistry kernels_;
  int wake_fd_ = -1;  // eventfd: runtime events and Stop() wake the loop
  std::atomic<bool> stop_requested_{false};
  std::string python_version_;  // "major.minor" of python.interpreter, set by Run when python.allow
};

}  // namespace tailcut::executor
