// Runs one child process for an attempt (the shell and exec kernels): its
// own process group (cancellation kills it and what it started), stdout
// as the output (capped), the stderr tail and exit status in the error,
// rlimits set in the child, optional progress lines on a file descriptor.
// The fiber polls the child with short cooperative sleeps, so the worker
// thread keeps running other fibers meanwhile.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tailcut/common/status.h"
#include "tailcut/executor/kernel.h"

namespace tailcut::executor {

// The file descriptor a child gets for progress lines (TAILCUT_PROGRESS_FD).
inline constexpr int kProgressFd = 3;

struct ChildSpec {
  std::string what;               // "exec": exit and signal errors start with it ("" for shell)
  std::string path;               // the program
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // NAME=value, the whole environment
  std::string cwd;                // empty: the executor's
  double cpu_s = 0;               // RLIMIT_CPU, 0 = none
  uint64_t memory_bytes = 0;      // RLIMIT_AS, 0 = none
  uint64_t memory_request_mb = 0;  // Resources.memory_mb: MemoryWatch over the child's tree, 0 = none
  bool progress = false;          // a pipe at kProgressFd; lines like "0.4"
  size_t max_stdout = 1 << 20;    // output beyond this is dropped
};

// Resident memory of process `pid` (/proc/PID/statm), 0 when it is gone.
uint64_t ResidentBytes(int pid);

// A task's memory request (Resources.memory_mb) against the resident memory
// of its process and, with `tree`, every descendant it started (a shell
// task's programs). Reading /proc costs, so Over() looks at most every
// kCheckS; between looks a task may go past its request. The caller kills
// the task when Over() says so (docs/JOBS.md, "Memory").
class MemoryWatch {
 public:
  static constexpr double kCheckS = 0.05;
  MemoryWatch(uint64_t request_mb, int pid, bool tree) : request_mb_(request_mb), pid_(pid), tree_(tree) {}
  bool Over();
  // "exceeded its memory request of N MB (resident R MB)"
  std::string Why() const;

 private:
  uint64_t request_mb_;
  int pid_;
  bool tree_;
  uint64_t seen_bytes_ = 0;
  double next_check_ = 0;  // seconds on the steady clock
};

// The daemon's environment with `overrides` (NAME=value) replacing or
// adding entries, later ones winning.
std::vector<std::string> MergeEnvironment(const std::vector<std::string>& overrides);

// stdout on exit code 0; else an error with the exit code or signal and
// the stderr tail; Unavailable("cancelled") when ctx was cancelled.
StatusOr<std::string> RunChild(KernelContext& ctx, const ChildSpec& spec);

}  // namespace tailcut::executor
