// Child processes for local daemons: the local cluster (demo, train, the
// live bench, the dispatch benchmark, the integration tests) runs executor
// and scheduler binaries next to the running one.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace tailcut {

// The folder holding the running executable (the current folder if unknown).
std::filesystem::path ExecutableDir();

// This machine's host name ("localhost" if unknown).
std::string HostName();

// Keeps message-sized buffers (task args and outputs of hundreds of KiB)
// in the heap: glibc otherwise maps each block over its mmap threshold
// (128 KiB at first) afresh and returns it on free, so every copy of a big
// argument page-faults (halved the step time of `tailcut train`,
// docs/GPU.md). Mapped above 32 MiB; at most 64 MiB kept free at a heap's
// top. Called first by the daemons and the CLI; no-op without glibc, or
// when GLIBC_TUNABLES sets glibc.malloc.* (the operator's own tuning).
void TuneAllocatorForMessages();

// Starts argv[0] with argv, stdin from /dev/null and stdout + stderr
// written to `log_path` (appended to when `append`). Returns the child's
// pid, or -1. The child gets SIGTERM when the thread that started it ends
// (PR_SET_PDEATHSIG), so daemons never outlive a crashed or killed parent.
pid_t SpawnProcess(const std::vector<std::string>& argv, const std::string& log_path, bool append = false);

// One child process, reaped by its owner. Not thread-safe.
class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path, bool append = false)
      : pid_(SpawnProcess(argv, log_path, append)) {}
  ~ChildProcess() { Stop(); }
  ChildProcess(ChildProcess&& o) noexcept : pid_(o.pid_), status_(o.status_) { o.pid_ = -1; }
  ChildProcess& operator=(ChildProcess&& o) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool started() const { return pid_ > 0 || status_ != -1; }
  pid_t pid() const { return pid_; }
  // Reaps the child if it has exited; true while it runs.
  bool Alive();
  // The wait status once it has exited (see waitpid), else -1.
  int exit_status() const { return status_; }
  // Sends `sig`, waits up to `grace_s` for it to exit, then SIGKILLs it.
  // Returns the wait status (-1 if there was no process).
  int Stop(int sig = 15 /* SIGTERM */, double grace_s = 5);

 private:
  pid_t pid_ = -1;
  int status_ = -1;
};

}  // namespace tailcut
