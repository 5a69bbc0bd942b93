// The `python` kernel: a pool of warm Python worker processes, one per slot,
// each running `python -m tailcut.worker` on the far end of a socket pair.
//
// Frames both ways are [u32 little-endian length][u8 type][payload], the
// length counting type + payload (python/tailcut/worker.py is the other
// side). The executor sends T (a task: the attempt's argument bytes as the
// client made them), I (the next task's inputs) and X (skip the queued task
// of this number: it was cancelled); the worker answers H (hello, once: its
// "major.minor"), P (progress, a little-endian float32), R (the task's run
// time, a little-endian float64 of seconds, then the result envelope, which
// also carries the function's exception: a task that raised still ran), C (it stopped on SIGINT, or skipped it) or E
// (it could not start: the reason). The executor never unpickles anything: args and results pass through as bytes.
//
// Batches (docs/PYTHON.md, "Batches"): the tasks queued on a slot go to its
// worker in one write; the worker runs them in order and answers each. A
// page of shared memory (fd 4) says which task the worker started last (its
// number: T frames count from 1), written before the function runs, so
// when a worker dies mid-batch the executor knows exactly which tasks
// started (they fail, as a lone task's crash does) and which did not (they
// are queued again, never lost, never run twice); and which task a SIGINT
// is for (the worker raises KeyboardInterrupt only in that one).
//
// Each worker has a reader thread doing blocking reads, so the kernel's
// fiber waits on a fiber condition variable and never blocks its thread.
#include "tailcut/executor/python.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>

#include "python_batch.h"
#include "python_worker.h"
#include "tailcut/common/log.h"

extern char** environ;

namespace tailcut::executor {
namespace {

using namespace python;  // the worker (python_worker.h) and its frames

constexpr double kStartTimeoutS = 60;  // imports of big preloads can take a while
constexpr int kWorkerFd = 3;           // the worker's end of the socket pair
constexpr int kStateFd = 4;            // the shared page: u64 started task, u64 task a SIGINT is for
constexpr size_t kMaxBatchBytes = 1u << 20;  // frame bytes in one batch to a worker (at least one task)

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

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
StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, int fd, int stdout_fd,
                      int state_fd = -1) {
  // The child's fds 0, 1, 3 and 4 are made in that order, so a source among
  // them would be overwritten before it is copied (an executor started with
  // stdin and stdout closed gets its socket pair as fds 0 and 1): such a
  // source is copied above them first.
  constexpr int kFirstFree = 5;
  std::vector<int> moved;
  for (int* from : {&fd, &stdout_fd, &state_fd}) {
    if (*from < 0 || *from >= kFirstFree) continue;
    const int high = fcntl(*from, F_DUPFD_CLOEXEC, kFirstFree);
    if (high < 0) {
      const Status s = Status::IoError(Errno("cannot start " + argv[0] + ": fcntl"));
      for (int m : moved) close(m);
      return s;
    }
    moved.push_back(*from = high);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (stdout_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
  if (fd >= 0) posix_spawn_file_actions_adddup2(&actions, fd, kWorkerFd);
  if (state_fd >= 0) posix_spawn_file_actions_adddup2(&actions, state_fd, kStateFd);
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
  for (int m : moved) close(m);
  if (rc != 0) return Status::IoError("cannot start " + argv[0] + ": " + std::strerror(rc));
  return pid;
}

class PythonPool {
 public:
  PythonPool(PythonOptions o, uint32_t slots) : o_(std::move(o)), slots_(slots), env_(WorkerEnv(PythonPackagePath(o_))) {
    std::string preload;
    for (const std::string& m : o_.preload) preload += (preload.empty() ? "" : ",") + m;
    argv_ = {o_.interpreter,
             "-m",
             "tailcut.worker",
             "--fd",
             std::to_string(kWorkerFd),
             "--state-fd",
             std::to_string(kStateFd),
             "--max-result-bytes",
             std::to_string(o_.max_result_bytes),
             "--preload",
             preload};
  }

  // A lone attempt: a batch of one.
  StatusOr<std::string> Run(KernelContext& ctx) {
    StatusOr<std::string> out = Status::Internal("python: the task was not run");
    KernelBatch one{{&ctx}, [](size_t) {}, [&](size_t, StatusOr<std::string> r) { out = std::move(r); }};
    RunBatch(one);
    return out;
  }

  // Hands a prefix of the batch to one worker in one write and answers each
  // task as its frame comes (the rest go back to the runtime's queue).
  void RunBatch(KernelBatch& b) {
    std::string frames;
    size_t n = 0;
    std::unique_ptr<Worker> w = TakeIdle();
    if (!w || !w->SendRaw(frames = Frames(b, *w, &n))) {
      w.reset();  // died while idle: replaced
      auto started = Start(*b.ctx[0]);
      if (!started.ok()) return b.finished(0, started.status());
      w = std::move(started).value();
      if (!w->SendRaw(frames = Frames(b, *w, &n)))
        return b.finished(0, Status::Internal(w->Ending() + " before taking the task"));
    }
    const uint64_t base = w->sent;
    w->sent += n;
    b.started(0);  // as it reads it, as a lone task always was; the others when the page says so
    if (ServeBatch(b, *w, n, base, o_.cancel_grace_s))
      Release(std::move(w));  // else ~Worker kills it: a fresh one takes its place
  }

 private:
  // The frames of as many of b's tasks as `w` may take, their count in *n:
  // at most kMaxBatchBytes of frames, inputs included (but one task at
  // least), and python_max_tasks.
  std::string Frames(const KernelBatch& b, const Worker& w, size_t* n) const {
    std::string out;
    size_t limit = b.ctx.size();
    if (o_.max_tasks > 0)
      limit = std::min<size_t>(limit, std::max<uint32_t>(1, o_.max_tasks - std::min(w.tasks, o_.max_tasks)));
    auto bytes = [](const KernelContext& ctx) {  // of the frames below
      size_t size = 5 + ctx.args().size();
      if (!ctx.inputs().empty()) size += 5 + 4;
      for (const KernelInput& i : ctx.inputs()) size += 4 + i.output.size();
      return size;
    };
    for (*n = 0; *n < limit && (*n == 0 || out.size() + bytes(*b.ctx[*n]) <= kMaxBatchBytes); ++*n) {
      const KernelContext& ctx = *b.ctx[*n];
      if (!ctx.inputs().empty()) {  // upstream results (python/tailcut/_pickling.py): u32 n | n x (u32 len | bytes)
        std::string in;
        auto u32 = [&](size_t v) {
          const uint32_t x = static_cast<uint32_t>(v);
          in.append(reinterpret_cast<const char*>(&x), 4);  // little-endian hosts only, as AppendFrame
        };
        u32(ctx.inputs().size());
        for (const KernelInput& i : ctx.inputs()) {
          u32(i.output.size());
          in += i.output;
        }
        AppendFrame(&out, kInputs, in);
      }
      AppendFrame(&out, kTask, ctx.args());
    }
    return out;
  }

  std::unique_ptr<Worker> TakeIdle() {
    for (;;) {
      std::unique_ptr<Worker> w;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (idle_.empty()) return nullptr;
        w = std::move(idle_.back());
        idle_.pop_back();
      }
      // Not under mu_: Ending may wait for the process.
      if (w->dead())
        TC_LOG(Warn) << w->Ending() << " while idle: replaced";
      else if (w->talked())  // its frames would be taken for the next task's
        TC_LOG(Warn) << "python worker (pid " << w->pid()
                     << ") sent frames between tasks (from a thread its last task left running?): replaced";
      else
        return w;
    }
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
    const int state_fd = memfd_create("tailcut-python-worker", MFD_CLOEXEC);
    void* state = MAP_FAILED;
    if (state_fd >= 0 && ftruncate(state_fd, kStateBytes) == 0)
      state = mmap(nullptr, kStateBytes, PROT_READ | PROT_WRITE, MAP_SHARED, state_fd, 0);
    if (state == MAP_FAILED) {
      Status s = Status::IoError(Errno("python worker state page"));
      if (state_fd >= 0) close(state_fd);
      close(fds[0]);
      close(fds[1]);
      return s;
    }
    // The worker's fd 1 is our stderr: C code printing to stdout lands in the log, never on a protocol.
    auto pid = Spawn(argv_, env_, fds[1], 2, state_fd);
    close(fds[1]);
    close(state_fd);  // the mapping stays
    if (!pid.ok()) {
      close(fds[0]);
      munmap(state, kStateBytes);
      return pid.status();
    }
    // The worker checks results against max_result_bytes; the envelope adds the output tails.
    auto w = std::make_unique<Worker>(*pid, fds[0], o_.max_result_bytes + (1u << 20), state);
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
  return registry->Register(
      "python", [pool](KernelContext& ctx) { return pool->Run(ctx); }, [pool](KernelBatch& b) { pool->RunBatch(b); });
}

}  // namespace tailcut::executor
