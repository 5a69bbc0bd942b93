#include "tailcut/common/process.h"

#include <fcntl.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

extern char** environ;

namespace tailcut {

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

std::filesystem::path ExecutableDir() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::current_path() : p.parent_path();
}

void TuneAllocatorForMessages() {
#if defined(__GLIBC__)
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables && std::strstr(tunables, "glibc.malloc.")) return;  // the operator's choice
  // 32 MiB is glibc's own ceiling for its dynamic threshold; trim at twice
  // it, as glibc's dynamic rule does.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
}

pid_t SpawnProcess(const std::vector<std::string>& argv, const std::string& log_path, bool append) {
  if (argv.empty()) return -1;
  // Everything the child needs is prepared before fork: between fork and
  // exec it calls only async-signal-safe functions.
  std::vector<char*> args;
  for (auto& s : argv) args.push_back(const_cast<char*>(s.c_str()));
  args.push_back(nullptr);
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid != 0) return pid;  // the parent (or -1)
  // The child. It must not outlive whoever started it: a demo stopped with
  // Ctrl-C or a test that crashed leaves no daemons behind (the signal
  // comes when the spawning thread ends).
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(127);  // it ended already
  int log = open(log_path.c_str(), flags, 0644);
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (log < 0 || null < 0 || dup2(log, STDOUT_FILENO) < 0 || dup2(log, STDERR_FILENO) < 0 ||
      dup2(null, STDIN_FILENO) < 0)
    _exit(127);
  execve(args[0], args.data(), environ);
  _exit(127);
}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    Stop();
    pid_ = o.pid_;
    status_ = o.status_;
    o.pid_ = -1;
  }
  return *this;
}

bool ChildProcess::Alive() {
  if (pid_ <= 0) return false;
  int st = 0;
  if (waitpid(pid_, &st, WNOHANG) != pid_) return true;
  status_ = st;
  pid_ = -1;
  return false;
}

int ChildProcess::Stop(int sig, double grace_s) {
  if (pid_ <= 0) return status_;
  kill(pid_, sig);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  while (Alive()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid_, SIGKILL);
      int st = 0;
      waitpid(pid_, &st, 0);
      status_ = st;
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status_;
}

}  // namespace tailcut
