#include "child_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <unordered_map>

extern char** environ;

namespace tailcut::executor {
namespace {

constexpr size_t kStderrTail = 2048;

struct Pipe {
  int read_fd = -1, write_fd = -1;
  ~Pipe() {
    CloseRead();
    CloseWrite();
  }
  void CloseRead() {
    if (read_fd >= 0) close(read_fd);
    read_fd = -1;
  }
  void CloseWrite() {
    if (write_fd >= 0) close(write_fd);
    write_fd = -1;
  }
};

Status MakePipe(Pipe* p) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::IoError(std::string("pipe: ") + std::strerror(errno));
  p->read_fd = fds[0];
  p->write_fd = fds[1];
  fcntl(p->read_fd, F_SETFL, O_NONBLOCK);
  return Status::Ok();
}

// Reads what is available; false at EOF.
bool DrainFd(int fd, std::string* out, size_t cap, bool keep_tail, bool* got_data) {
  char buf[16384];
  for (;;) {
    ssize_t r = read(fd, buf, sizeof buf);
    if (r > 0) {
      *got_data = true;
      if (keep_tail) {
        out->append(buf, static_cast<size_t>(r));
        if (out->size() > cap) out->erase(0, out->size() - cap);
      } else if (out->size() < cap) {
        out->append(buf, std::min(static_cast<size_t>(r), cap - out->size()));
      }
      continue;
    }
    if (r == 0) return false;
    if (errno == EINTR) continue;
    return true;  // EAGAIN: nothing more for now
  }
}

// Complete lines of `buf` as progress fractions; the last valid one is
// reported, bad lines are ignored (a program's stray output must not fail it).
void TakeProgress(std::string* buf, KernelContext& ctx) {
  size_t nl;
  while ((nl = buf->find('\n')) != std::string::npos) {
    std::string line = buf->substr(0, nl);
    buf->erase(0, nl + 1);
    char* end = nullptr;
    double v = std::strtod(line.c_str(), &end);
    while (end && (*end == ' ' || *end == '\r' || *end == '\t')) ++end;
    if (!line.empty() && end && *end == '\0' && v >= 0 && v <= 1) ctx.ReportProgress(static_cast<float>(v));
  }
  if (buf->size() > 4096) buf->clear();  // no line break in sight: not progress
}

// In the forked child: only async-signal-safe calls until execve.
[[noreturn]] void ExecChild(const ChildSpec& spec, char* const* argv, char* const* envp, int out, int err,
                            int progress) {
  setpgid(0, 0);  // own group: cancellation kills what it starts too
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);  // the daemon blocks SIGTERM; the child must not
  for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);  // ignored ones (SIGPIPE) too
  int null = open("/dev/null", O_RDONLY);
  if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(126);
  if (progress >= 0) {
    if (progress == kProgressFd) {
      fcntl(kProgressFd, F_SETFD, 0);  // dup2 onto itself would keep O_CLOEXEC
    } else if (dup2(progress, kProgressFd) < 0) {
      _exit(126);
    }
  }
  auto fail = [&](const char* what) {
    const char* msg = strerror(errno);
    (void)!write(2, what, strlen(what));
    (void)!write(2, msg, strlen(msg));
    _exit(127);
  };
  if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) fail("cannot enter the working directory: ");
  if (spec.cpu_s > 0) {
    // Soft: SIGXCPU; one second later the hard limit kills it.
    rlim_t s = static_cast<rlim_t>(std::max(1.0, spec.cpu_s));
    rlimit lim{s, s + 1};
    if (setrlimit(RLIMIT_CPU, &lim) != 0) fail("setrlimit(RLIMIT_CPU): ");
  }
  if (spec.memory_bytes > 0) {
    rlimit lim{spec.memory_bytes, spec.memory_bytes};
    if (setrlimit(RLIMIT_AS, &lim) != 0) fail("setrlimit(RLIMIT_AS): ");
  }
  execve(spec.path.c_str(), argv, envp);
  fail("cannot run the program: ");
  _exit(127);  // not reached: fail exits
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

uint64_t ResidentBytes(int pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/statm", pid);
  FILE* f = std::fopen(path, "r");
  if (!f) return 0;
  unsigned long size = 0, resident = 0;
  int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<uint64_t>(resident) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

namespace {

// `pid` and its descendants, through /proc/PID/task/PID/children (children
// of its main thread: what shells and most programs start).
uint64_t TreeResidentBytes(int pid, int depth = 0) {
  uint64_t bytes = ResidentBytes(pid);
  if (depth > 32) return bytes;  // a fork chain this deep is not worth following
  std::ifstream children("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  for (int child; children >> child;) bytes += TreeResidentBytes(child, depth + 1);
  return bytes;
}

double SteadyS() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

bool MemoryWatch::Over() {
  if (request_mb_ == 0) return false;
  if (seen_bytes_ > (request_mb_ << 20)) return true;
  double now = SteadyS();
  if (now < next_check_) return false;
  next_check_ = now + kCheckS;
  seen_bytes_ = tree_ ? TreeResidentBytes(pid_) : ResidentBytes(pid_);
  return seen_bytes_ > (request_mb_ << 20);
}

std::string MemoryWatch::Why() const {
  return "exceeded its memory request of " + std::to_string(request_mb_) + " MB (resident " +
         std::to_string(seen_bytes_ >> 20) + " MB)";
}

std::vector<std::string> MergeEnvironment(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  std::unordered_map<std::string, size_t> at;  // name -> index in env
  auto put = [&](std::string entry) {
    std::string name = entry.substr(0, entry.find('='));
    if (auto it = at.find(name); it != at.end()) {
      env[it->second] = std::move(entry);
    } else {
      at.emplace(std::move(name), env.size());
      env.push_back(std::move(entry));
    }
  };
  for (char** e = environ; e && *e; ++e) put(*e);
  for (const std::string& o : overrides) put(o);
  return env;
}

StatusOr<std::string> RunChild(KernelContext& ctx, const ChildSpec& spec) {
  Pipe out, err, prog;
  if (Status s = MakePipe(&out); !s.ok()) return s;
  if (Status s = MakePipe(&err); !s.ok()) return s;
  if (spec.progress)
    if (Status s = MakePipe(&prog); !s.ok()) return s;
  // Everything the child touches is ready before fork.
  std::vector<char*> argv, envp;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return Status::IoError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) ExecChild(spec, argv.data(), envp.data(), out.write_fd, err.write_fd, prog.write_fd);
  setpgid(pid, pid);  // also here: a cancel right after fork must find the group
  out.CloseWrite();
  err.CloseWrite();
  prog.CloseWrite();

  std::string stdout_text, stderr_tail, progress_buf;
  bool out_open = true, err_open = true, prog_open = spec.progress, cancelled = false;
  int wait_status = 0;
  double backoff_s = 0.0002;
  MemoryWatch memory(spec.memory_request_mb, pid, true);
  bool over_memory = false;
  for (;;) {
    bool got = false;
    if (out_open) out_open = DrainFd(out.read_fd, &stdout_text, spec.max_stdout, false, &got);
    if (err_open) err_open = DrainFd(err.read_fd, &stderr_tail, kStderrTail, true, &got);
    if (prog_open) {
      prog_open = DrainFd(prog.read_fd, &progress_buf, 1 << 16, false, &got);
      TakeProgress(&progress_buf, ctx);
    }
    pid_t w = waitpid(pid, &wait_status, WNOHANG);
    if (w == pid) {
      // Collect what is left in the pipes (unless a grandchild keeps them open).
      bool more = false;
      if (out_open) DrainFd(out.read_fd, &stdout_text, spec.max_stdout, false, &more);
      if (err_open) DrainFd(err.read_fd, &stderr_tail, kStderrTail, true, &more);
      break;
    }
    if (!cancelled && ctx.cancelled()) {
      cancelled = true;
      kill(-pid, SIGKILL);
      continue;
    }
    if (!over_memory && !cancelled && memory.Over()) {
      over_memory = true;
      kill(-pid, SIGKILL);
      continue;
    }
    backoff_s = got ? 0.0002 : std::min(backoff_s * 2, 0.01);
    ctx.SleepFor(backoff_s / ctx.time_factor());  // plain polling delay, not stretched
  }
  if (cancelled) return Status::Unavailable("cancelled");
  const std::string prefix = spec.what.empty() ? "" : spec.what + ": ";
  if (over_memory) return Status::ResourceExhausted(prefix + memory.Why());
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    std::string why = "killed by signal " + std::to_string(sig);
    if (spec.cpu_s > 0 && (sig == SIGXCPU || sig == SIGKILL)) why += " (cpu_s limit " + std::to_string(spec.cpu_s) + ")";
    return Status::Internal(prefix + why + ": " + Trimmed(stderr_tail));
  }
  int code = WEXITSTATUS(wait_status);
  if (code != 0) return Status::Internal(prefix + "exit code " + std::to_string(code) + ": " + Trimmed(stderr_tail));
  return stdout_text;
}

}  // namespace tailcut::executor
