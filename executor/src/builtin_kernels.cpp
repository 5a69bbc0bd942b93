// The built-in kernels: noop, sleep, spin, matmul, shell, coded_matmul,
// gradient_worker (docs/KERNELS.md, docs/GPU.md).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tailcut/common/kernel_args.h"
#include "tailcut/common/random.h"
#include "gpu_kernels.h"
#include "tailcut/executor/kernel.h"

extern char** environ;

namespace tailcut::executor {
namespace {

using SteadyTime = std::chrono::steady_clock;

Status Cancelled() { return Status::Unavailable("cancelled"); }

// The longest sleep or spin a task may ask for (a week); longer is a typo,
// and task timeouts are the tool for bounding work.
constexpr double kMaxKernelMs = 7 * 24 * 3600e3;
// Log-normal noise beyond this sigma overflows (exp of hundreds).
constexpr double kMaxSigma = 10;

// ---------------------------------------------------------------- sleep --

StatusOr<std::string> SleepKernel(KernelContext& ctx) {
  auto args = KernelArgs::Parse(ctx.args());
  if (!args.ok()) return args.status();
  double ms = 10, sigma = 0;
  int64_t seed = -1;
  if (Status s = args->GetDouble("ms", &ms, 0, kMaxKernelMs); !s.ok()) return s;
  if (Status s = args->GetDouble("sigma", &sigma, 0, kMaxSigma); !s.ok()) return s;
  if (Status s = args->GetInt("seed", &seed); !s.ok()) return s;
  if (sigma > 0) {
    // Lognormal multiplicative noise with median 1: the median stays `ms`.
    // The common RNG: the same seed gives the same time on every standard library.
    Rng rng(seed >= 0 ? static_cast<uint64_t>(seed) : std::random_device{}());
    ms = std::min(ms * std::exp(sigma * rng.Normal()), kMaxKernelMs);
  }
  // Sleep in up to 20 steps so progress moves; each step wakes on cancel.
  const double total_s = ms / 1000.0;
  const int steps = total_s > 0.2 ? 20 : 1;
  for (int i = 0; i < steps; ++i) {
    if (!ctx.SleepFor(total_s / steps)) return Cancelled();
    ctx.ReportProgress(static_cast<float>(i + 1) / steps);
  }
  return std::string();
}

// ----------------------------------------------------------------- spin --

StatusOr<std::string> SpinKernel(KernelContext& ctx) {
  auto args = KernelArgs::Parse(ctx.args());
  if (!args.ok()) return args.status();
  double ms = 10;
  if (Status s = args->GetDouble("ms", &ms, 0, kMaxKernelMs); !s.ok()) return s;
  const double total_s = ms / 1000.0 * ctx.time_factor();
  const auto start = SteadyTime::now();
  auto last_yield = start;
  volatile uint64_t sink = 0;  // keeps the loop from being optimized away
  for (;;) {
    for (int i = 0; i < 2000; ++i) sink = sink * 6364136223846793005ULL + 1442695040888963407ULL;
    auto now = SteadyTime::now();
    double done = std::chrono::duration<double>(now - start).count();
    if (done >= total_s) break;
    if (ctx.cancelled()) return Cancelled();
    if (now - last_yield > std::chrono::milliseconds(1)) {
      ctx.ReportProgress(static_cast<float>(done / total_s));
      ctx.Yield();  // share the thread with other fibers
      last_yield = SteadyTime::now();
    }
  }
  ctx.ReportProgress(1.0f);
  return std::string();
}

// --------------------------------------------------------------- matmul --

constexpr int kMatmulMaxN = 4096;
constexpr int kBlock = 64;

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// C += A·B over row block [i0, i1), cache-blocked in k and j.
void MultiplyRows(const double* a, const double* b, double* c, int n, int i0, int i1) {
  for (int k0 = 0; k0 < n; k0 += kBlock) {
    const int k1 = std::min(k0 + kBlock, n);
    for (int j0 = 0; j0 < n; j0 += kBlock) {
      const int j1 = std::min(j0 + kBlock, n);
      for (int i = i0; i < i1; ++i) {
        double* ci = c + static_cast<size_t>(i) * n;
        for (int k = k0; k < k1; ++k) {
          const double aik = a[static_cast<size_t>(i) * n + k];
          const double* bk = b + static_cast<size_t>(k) * n;
          for (int j = j0; j < j1; ++j) ci[j] += aik * bk[j];
        }
      }
    }
  }
}

StatusOr<std::string> MatmulKernel(KernelContext& ctx) {
  auto args = KernelArgs::Parse(ctx.args());
  if (!args.ok()) return args.status();
  int64_t n = 128, seed = 1;
  if (Status s = args->GetInt("n", &n); !s.ok()) return s;
  if (Status s = args->GetInt("seed", &seed); !s.ok()) return s;
  if (n < 1 || n > kMatmulMaxN)
    return Status::InvalidArgument("matmul: n must be in 1.." + std::to_string(kMatmulMaxN));
  const int size = static_cast<int>(n);
  const auto a = MatmulInput(size, static_cast<uint64_t>(seed));
  const auto b = MatmulInput(size, static_cast<uint64_t>(seed) + 1);
  char text[64];
  if (UseGpu(ctx)) {  // the GPU twin: cuBLAS dgemm, same checksum up to rounding
    auto sum = GpuMatmulChecksum(a, b, size, ctx);
    if (!sum.ok()) return sum.status();
    ctx.ReportProgress(1.0f);
    std::snprintf(text, sizeof text, "checksum=%.17g", *sum);
    return std::string(text);
  }
  std::vector<double> c(static_cast<size_t>(size) * size, 0.0);
  for (int i0 = 0; i0 < size; i0 += kBlock) {
    if (ctx.cancelled()) return Cancelled();
    MultiplyRows(a.data(), b.data(), c.data(), size, i0, std::min(i0 + kBlock, size));
    ctx.ReportProgress(static_cast<float>(std::min(i0 + kBlock, size)) / size);
    ctx.Yield();
  }
  double sum = 0;
  for (double v : c) sum += v;
  std::snprintf(text, sizeof text, "checksum=%.17g", sum);
  return std::string(text);
}

// ---------------------------------------------------------------- shell --

constexpr size_t kShellMaxStdout = 1 << 20;  // output beyond this is dropped
constexpr size_t kShellStderrTail = 2048;

struct Pipe {
  int read_fd = -1, write_fd = -1;
  ~Pipe() {
    if (read_fd >= 0) close(read_fd);
    if (write_fd >= 0) close(write_fd);
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

// Runs `sh -c <args>` in its own process group. The fiber polls the child with
// short cooperative sleeps, so the worker thread keeps running other fibers.
StatusOr<std::string> ShellKernel(KernelContext& ctx) {
  const std::string command(ctx.args());
  if (command.empty()) return Status::InvalidArgument("shell: empty command line");
  Pipe out, err;
  if (Status s = MakePipe(&out); !s.ok()) return s;
  if (Status s = MakePipe(&err); !s.ok()) return s;

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err.write_fd, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Own process group, so cancellation also kills what the shell started.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);  // the daemon blocks SIGTERM; the child must not
  posix_spawnattr_setsigdefault(&attr, &all);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  // The daemon's environment, plus the attempt's output directory.
  std::vector<std::string> env_strings;
  std::vector<char*> env;
  if (!ctx.output_dir().empty()) {
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, "TAILCUT_OUTPUT_DIR=", 19) != 0) env.push_back(*e);
    env_strings.push_back("TAILCUT_OUTPUT_DIR=" + ctx.output_dir());
    env.push_back(env_strings.back().data());
    env.push_back(nullptr);
  }
  pid_t pid = -1;
  int rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, const_cast<char* const*>(argv),
                       env.empty() ? environ : env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Status::IoError(std::string("shell: spawn /bin/sh: ") + std::strerror(rc));
  close(out.write_fd);
  out.write_fd = -1;
  close(err.write_fd);
  err.write_fd = -1;

  std::string stdout_text, stderr_tail;
  bool out_open = true, err_open = true, cancelled = false;
  int wait_status = 0;
  double backoff_s = 0.0002;
  for (;;) {
    bool got = false;
    if (out_open) out_open = DrainFd(out.read_fd, &stdout_text, kShellMaxStdout, false, &got);
    if (err_open) err_open = DrainFd(err.read_fd, &stderr_tail, kShellStderrTail, true, &got);
    pid_t w = waitpid(pid, &wait_status, WNOHANG);
    if (w == pid) {
      // Collect what is left in the pipes (unless a grandchild keeps them open).
      bool more = false;
      if (out_open) DrainFd(out.read_fd, &stdout_text, kShellMaxStdout, false, &more);
      if (err_open) DrainFd(err.read_fd, &stderr_tail, kShellStderrTail, true, &more);
      break;
    }
    if (!cancelled && ctx.cancelled()) {
      cancelled = true;
      kill(-pid, SIGKILL);
      continue;
    }
    backoff_s = got ? 0.0002 : std::min(backoff_s * 2, 0.01);
    ctx.SleepFor(backoff_s / ctx.time_factor());  // plain polling delay, not stretched
  }
  if (cancelled) return Cancelled();
  if (WIFSIGNALED(wait_status))
    return Status::Internal("killed by signal " + std::to_string(WTERMSIG(wait_status)) + ": " + stderr_tail);
  int code = WEXITSTATUS(wait_status);
  if (code != 0) {
    while (!stderr_tail.empty() && (stderr_tail.back() == '\n' || stderr_tail.back() == '\r')) stderr_tail.pop_back();
    return Status::Internal("exit code " + std::to_string(code) + ": " + stderr_tail);
  }
  return stdout_text;
}

using TableOfKernels = std::vector<std::tuple<std::string, KernelFn, KernelTraits>>;

}  // namespace

std::vector<double> MatmulInput(int n, uint64_t seed) {
  std::vector<double> m(static_cast<size_t>(n) * n);
  uint64_t state = seed * 0x2545F4914F6CDD1DULL + 1;
  // Uniform in [-1, 1): top 53 bits as a fraction.
  for (double& v : m) v = static_cast<double>(SplitMix64(&state) >> 11) * 0x1.0p-52 - 1.0;
  return m;
}

double MatmulChecksum(const std::vector<double>& a, const std::vector<double>& b, int n) {
  std::vector<double> c(static_cast<size_t>(n) * n, 0.0);
  MultiplyRows(a.data(), b.data(), c.data(), n, 0, n);
  double sum = 0;
  for (double v : c) sum += v;
  return sum;
}

Status RegisterBuiltinKernels(KernelRegistry* r) {
  TableOfKernels kernels = {
      {"noop", [](KernelContext&) -> StatusOr<std::string> { return std::string(); },
       KernelTraits{.self_timed = true, .instant = true}},
      {"sleep", SleepKernel, KernelTraits{.self_timed = true}},
      {"spin", SpinKernel, KernelTraits{.self_timed = true}},
      {"matmul", MatmulKernel, {}},
      {"shell", ShellKernel, {}},
      {"coded_matmul", CodedMatmulKernel, {}},
      {"gradient_worker", GradientWorkerKernel, {}},
  };
  for (auto& [name, fn, traits] : kernels)
    if (Status s = r->Register(name, fn, traits); !s.ok()) return s;
  return Status::Ok();
}

KernelRegistry BuiltinKernels() {
  KernelRegistry r;
  Status s = RegisterBuiltinKernels(&r);  // an empty registry: cannot fail
  if (!s.ok()) internal::DieOnBadAccess(s);
  return r;
}

}  // namespace tailcut::executor
