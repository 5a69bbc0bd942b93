// The `python` kernel: a pool of warm Python worker processes, one per slot,
// each running `python -m tailcut.worker` on the far end of a socket pair.
//
// Frames both ways are [u32 little-endian length][u8 type][payload], the
// length counting type + payload (python/tailcut/worker.py is the other
// side). The executor sends T (a task: the attempt's argument bytes as the
// client made them); the worker answers H (hello, once: its "major.minor"),
// P (progress, a little-endian float32), R (the result envelope, which also
// carries the function's exception: a task that raised still ran), C (it
// stopped on SIGINT) or E (it could not start: the reason). The executor
// never unpickles anything: args and results pass through as bytes.
//
// Each worker has a reader thread doing blocking reads, so the kernel's
// fiber waits on a fiber condition variable and never blocks its thread.
#include "tailcut/executor/python.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>

#include "child_run.h"
#include "tailcut/common/log.h"

extern char** environ;

namespace tailcut::executor {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint8_t kInputs = 'I', kTask = 'T', kHello = 'H', kProgress = 'P', kResult = 'R', kCancelled = 'C',
                  kStartError = 'E';
constexpr uint8_t kDead = 0;  // not on the wire: the worker closed its end
constexpr double kStartTimeoutS = 60;  // imports of big preloads can take a while
constexpr int kWorkerFd = 3;           // the worker's end of the socket pair

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);  // a dead worker is an error, not SIGPIPE
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

struct Frame {
  uint8_t type = kDead;
  std::string payload;
};

// The environment of a worker: ours, with `path` first on PYTHONPATH.
std::vector<std::string> WorkerEnv(const std::string& path) {
  std::vector<std::string> env;
  std::string old;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    if (kv.rfind("PYTHONPATH=", 0) == 0)
      old = std::string(kv.substr(11));
    else
      env.emplace_back(kv);
  }
  env.push_back("PYTHONPATH=" + path + (old.empty() ? "" : ":" + old));
  return env;
}

// posix_spawn with the daemon's blocked signals undone (it blocks SIGINT
// and SIGTERM for its signal thread; a worker must get SIGINT) and `fd`
// (when >= 0) as the child's fd 3.
StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, int fd,
                      int stdout_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (stdout_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
  if (fd >= 0) posix_spawn_file_actions_adddup2(&actions, fd, kWorkerFd);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0].c_str(), &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Status::IoError("cannot start " + argv[0] + ": " + std::strerror(rc));
  return pid;
}

std::string DescribeExit(int wait_status) {
  if (WIFSIGNALED(wait_status)) return "was killed by signal " + std::to_string(WTERMSIG(wait_status));
  if (WIFEXITED(wait_status)) return "exited with code " + std::to_string(WEXITSTATUS(wait_status));
  return "ended";
}

// One worker process. Owned by one fiber at a time (the pool hands it out),
// its reader thread only fills `frames_`.
class Worker {
 public:
  // `max_frame`: a longer frame is a broken worker (it is cut off), not an allocation.
  Worker(pid_t pid, int fd, uint64_t max_frame)
      : pid_(pid), fd_(fd), max_frame_(max_frame), reader_([this] { ReadLoop(); }) {}
  ~Worker() {
    if (!reaped_) kill(pid_, SIGKILL);
    shutdown(fd_, SHUT_RDWR);  // wakes the reader even if a grandchild holds the other end
    reader_.join();
    close(fd_);
    Reap();
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  pid_t pid() const { return pid_; }
  uint32_t tasks = 0;  // tasks run to the end

  bool Send(uint8_t type, std::string_view payload) {
    char head[5];
    const uint32_t len = static_cast<uint32_t>(payload.size() + 1);
    std::memcpy(head, &len, 4);  // little-endian hosts only (x86-64, arm64)
    head[4] = static_cast<char>(type);
    return WriteAll(fd_, head, 5) && WriteAll(fd_, payload.data(), payload.size());
  }

  // The next frame within `seconds`; nullopt on timeout; type kDead once
  // the worker has closed its end.
  std::optional<Frame> Next(double seconds) {
    std::unique_lock<boost::fibers::mutex> lock(mu_);
    auto ready = [this] { return !frames_.empty() || eof_; };
    const auto wait = std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
    if (!cv_.wait_for(lock, wait, ready)) return std::nullopt;
    if (frames_.empty()) return Frame{};
    Frame f = std::move(frames_.front());
    frames_.pop_front();
    return f;
  }

  bool dead() {
    std::unique_lock<boost::fibers::mutex> lock(mu_);
    return eof_ && frames_.empty();
  }

  // Waits for the process (it closed its socket: it is exiting) and says how it ended.
  std::string Ending() {
    Reap();
    return "python worker (pid " + std::to_string(pid_) + ") " + DescribeExit(wait_status_);
  }

  uint64_t RssBytes() const { return ResidentBytes(static_cast<int>(pid_)); }

 private:
  void Reap() {
    if (reaped_) return;
    while (waitpid(pid_, &wait_status_, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }

  void ReadLoop() {
    for (;;) {
      uint32_t len = 0;
      Frame f;
      if (!ReadAll(fd_, reinterpret_cast<char*>(&len), 4) || len == 0 || len > max_frame_) break;
      std::string body(len, '\0');
      if (!ReadAll(fd_, body.data(), len)) break;
      f.type = static_cast<uint8_t>(body[0]);
      f.payload = body.substr(1);
      {
        std::unique_lock<boost::fibers::mutex> lock(mu_);
        frames_.push_back(std::move(f));
      }
      cv_.notify_all();
    }
    {
      std::unique_lock<boost::fibers::mutex> lock(mu_);
      eof_ = true;
    }
    cv_.notify_all();
  }

  const pid_t pid_;
  const int fd_;
  const uint64_t max_frame_;
  bool reaped_ = false;
  int wait_status_ = 0;
  boost::fibers::mutex mu_;
  boost::fibers::condition_variable cv_;
  std::deque<Frame> frames_;
  bool eof_ = false;
  std::thread reader_;  // last: starts once the rest is built
};

class PythonPool {
 public:
  PythonPool(PythonOptions o, uint32_t slots) : o_(std::move(o)), slots_(slots), env_(WorkerEnv(PythonPackagePath(o_))) {
    std::string preload;
    for (const std::string& m : o_.preload) preload += (preload.empty() ? "" : ",") + m;
    argv_ = {o_.interpreter, "-m", "tailcut.worker", "--fd", std::to_string(kWorkerFd),
             "--max-result-bytes", std::to_string(o_.max_result_bytes), "--preload", preload};
  }

  // The task, after its inputs (upstream results, python/tailcut/_pickling.py): u32 n | n x (u32 len | bytes).
  static bool SendTask(Worker& w, const KernelContext& ctx) {
    if (!ctx.inputs().empty()) {
      std::string frame;
      auto u32 = [&](size_t v) {
        const uint32_t x = static_cast<uint32_t>(v);
        frame.append(reinterpret_cast<const char*>(&x), 4);  // little-endian hosts only, as Send
      };
      u32(ctx.inputs().size());
      for (const KernelInput& in : ctx.inputs()) {
        u32(in.output.size());
        frame += in.output;
      }
      if (!w.Send(kInputs, frame)) return false;
    }
    return w.Send(kTask, ctx.args());
  }

  StatusOr<std::string> Run(KernelContext& ctx) {
    std::unique_ptr<Worker> w = TakeIdle();
    if (!w || !SendTask(*w, ctx)) {
      w.reset();  // died while idle: replaced
      auto started = Start(ctx);
      if (!started.ok()) return started.status();
      w = std::move(started).value();
      if (!SendTask(*w, ctx)) return Status::Internal(w->Ending() + " before taking the task");
    }
    std::optional<Clock::time_point> interrupted;
    // The worker's own resident memory (its interpreter included) against
    // the request; over it the worker is killed and replaced.
    MemoryWatch memory(ctx.memory_mb(), static_cast<int>(w->pid()), false);
    for (;;) {
      std::optional<Frame> f = w->Next(0.005);
      if (!interrupted && memory.Over())
        return Status::ResourceExhausted("python: " + memory.Why());  // ~Worker kills it
      if (!interrupted && ctx.cancelled()) {
        kill(w->pid(), SIGINT);  // KeyboardInterrupt in the function
        interrupted = Clock::now();
      }
      if (interrupted && !f && SecondsSince(*interrupted) > o_.cancel_grace_s) {
        TC_LOG(Info) << "python worker (pid " << w->pid() << ") did not stop within " << o_.cancel_grace_s
                     << " s of SIGINT: killed, a fresh one takes its place";
        return Status::Unavailable("cancelled");  // ~Worker kills it
      }
      if (!f) continue;
      switch (f->type) {
        case kProgress: {
          float p = 0;
          if (f->payload.size() == 4) std::memcpy(&p, f->payload.data(), 4);
          ctx.ReportProgress(p);
          break;
        }
        case kResult:
          ++w->tasks;
          Release(std::move(w));
          return std::move(f->payload);
        case kCancelled:
          Release(std::move(w));
          return Status::Unavailable("cancelled");
        case kDead:
          return Status::Internal(w->Ending() + " while running the task (os._exit, a crash, or killed; "
                                                "a fresh worker takes its slot)");
        default:
          return Status::Internal("python worker (pid " + std::to_string(w->pid()) + ") sent frame type " +
                                  std::to_string(f->type) + " mid-task: replaced");
      }
    }
  }

  ~PythonPool() = default;  // idle workers are killed by ~Worker

 private:
  std::unique_ptr<Worker> TakeIdle() {
    std::lock_guard<std::mutex> lock(mu_);
    while (!idle_.empty()) {
      std::unique_ptr<Worker> w = std::move(idle_.back());
      idle_.pop_back();
      if (!w->dead()) return w;
      TC_LOG(Warn) << w->Ending() << " while idle: replaced";
    }
    return nullptr;
  }

  void Release(std::unique_ptr<Worker> w) {
    if (o_.max_tasks > 0 && w->tasks >= o_.max_tasks) return;  // recycled: the next task starts a fresh one
    if (o_.max_rss_mb > 0 && w->RssBytes() > (static_cast<uint64_t>(o_.max_rss_mb) << 20)) {
      TC_LOG(Info) << "python worker (pid " << w->pid() << ") above python_max_rss_mb = " << o_.max_rss_mb
                   << ": recycled";
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (idle_.size() < slots_) idle_.push_back(std::move(w));
  }

  StatusOr<std::unique_ptr<Worker>> Start(KernelContext& ctx) {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return Status::IoError(Errno("socketpair"));
    // The worker's fd 1 is our stderr: C code printing to stdout lands in the log, never on a protocol.
    auto pid = Spawn(argv_, env_, fds[1], 2);
    close(fds[1]);
    if (!pid.ok()) {
      close(fds[0]);
      return pid.status();
    }
    // The worker checks results against max_result_bytes; the envelope adds the output tails.
    auto w = std::make_unique<Worker>(*pid, fds[0], o_.max_result_bytes + (1u << 20));
    const auto t0 = Clock::now();
    while (SecondsSince(t0) < kStartTimeoutS) {
      if (ctx.cancelled()) return Status::Unavailable("cancelled");
      std::optional<Frame> f = w->Next(0.01);
      if (!f) continue;
      if (f->type == kHello) return w;
      if (f->type == kStartError) return Status::Internal("python worker did not start: " + f->payload);
      if (f->type == kDead)
        return Status::Internal(w->Ending() + " at start (is the tailcut package importable by " + o_.interpreter +
                                "? PYTHONPATH starts with " + PythonPackagePath(o_) + "; see the executor's log)");
    }
    return Status::Internal("python worker did not start within " + std::to_string(int(kStartTimeoutS)) + " s");
  }

  const PythonOptions o_;
  const uint32_t slots_;
  const std::vector<std::string> env_;
  std::vector<std::string> argv_;
  std::mutex mu_;  // held only to move workers in and out, never across a wait
  std::vector<std::unique_ptr<Worker>> idle_;
};

}  // namespace

std::string PythonPackagePath(const PythonOptions& o) {
#ifdef TAILCUT_PYTHON_SOURCE_DIR
  return o.path.empty() ? std::string(TAILCUT_PYTHON_SOURCE_DIR) : o.path;
#else
  return o.path;
#endif
}

StatusOr<std::string> ProbePythonVersion(const std::string& interpreter) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::IoError(Errno("pipe"));
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  auto pid = Spawn({interpreter, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"}, env, -1, fds[1]);
  close(fds[1]);
  std::string out;
  if (pid.ok()) {
    char buf[256];
    ssize_t r;
    while ((r = read(fds[0], buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR))
      if (r > 0) out.append(buf, static_cast<size_t>(r));
  }
  close(fds[0]);
  if (!pid.ok()) return Status::InvalidArgument("python = '" + interpreter + "': " + pid.status().message());
  int status = 0;
  while (waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || out.empty() || out.find('.') == std::string::npos)
    return Status::InvalidArgument("python = '" + interpreter + "' does not run as a Python interpreter (it " +
                                   DescribeExit(status) + ")");
  return out;
}

Status RegisterPythonKernel(KernelRegistry* registry, const PythonOptions& options, uint32_t slots) {
  auto pool = std::make_shared<PythonPool>(options, std::max(1u, slots));
  return registry->Register("python", [pool](KernelContext& ctx) { return pool->Run(ctx); });
}

}  // namespace tailcut::executor
