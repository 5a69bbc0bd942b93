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
  bool progress = false;          // a pipe at kProgressFd; lines like "0.4"
  size_t max_stdout = 1 << 20;    // output beyond this is dropped
};

// The daemon's environment with `overrides` (NAME=value) replacing or
// adding entries, later ones winning.
std::vector<std::string> MergeEnvironment(const std::vector<std::string>& overrides);

// stdout on exit code 0; else an error with the exit code or signal and
// the stderr tail; Unavailable("cancelled") when ctx was cancelled.
StatusOr<std::string> RunChild(KernelContext& ctx, const ChildSpec& spec);

}  // namespace tailcut::executor
