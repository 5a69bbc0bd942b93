// The built-in kernels: noop, sleep, spin, matmul, shell, exec, coded_matmul,
// gradient_worker (docs/KERNELS.md, docs/GPU.md).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tailcut/common/kernel_args.h"
#include "tailcut/common/random.h"
#include "child_run.h"
#include "gpu_kernels.h"
#include "tailcut/executor/kernel.h"

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

// Runs `sh -c <args>` with the task's identity in its environment.
StatusOr<std::string> ShellKernel(KernelContext& ctx) {
  const std::string command(ctx.args());
  if (command.empty()) return Status::InvalidArgument("shell: empty command line");
  ChildSpec spec;
  spec.path = "/bin/sh";
  spec.argv = {"/bin/sh", "-c", command};
  std::vector<std::string> env = TaskEnvironment(ctx);
  // Upstream outputs as files (docs/JOBS.md, "Task inputs"), removed after.
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string inputs = ctx.inputs().empty()
                                 ? ""
                                 : (fs::temp_directory_path(ec) / "tailcut-inputs" /
                                    ("attempt-" + std::to_string(ctx.attempt_id()) + "-" + std::to_string(getpid())))
                                       .string();
  if (Status s = WriteTaskInputs(ctx, inputs, &env); !s.ok()) return Status::IoError("shell: " + s.message());
  spec.env = MergeEnvironment(env);
  spec.memory_request_mb = ctx.memory_mb();
  StatusOr<std::string> out = RunChild(ctx, spec);
  if (!inputs.empty()) fs::remove_all(inputs, ec);
  return out;
}

// ----------------------------------------------------------------- exec --

// The smaller of two limits where 0 means none.
template <typename T>
T Tighter(T task, T executor) {
  return task == 0 ? executor : executor == 0 ? task : std::min(task, executor);
}

// A program from argv, without a shell, in a scratch folder of its own
// (docs/KERNELS.md, "exec").
StatusOr<std::string> ExecKernel(KernelContext& ctx, const ExecOptions& opt) {
  auto args = ParseExecArgs(ctx.args());
  if (!args.ok()) return args.status();
  namespace fs = std::filesystem;
  const std::string& given = args->argv[0];
  if (given.empty() || given[0] != '/')
    return Status::InvalidArgument("exec: the program must be an absolute path, got '" + given + "'");
  const std::string program = fs::path(given).lexically_normal().string();
  if (!ExecAllowed(opt.allow, program)) {
    std::string allowed;
    for (const std::string& a : opt.allow) allowed += (allowed.empty() ? "" : ", ") + a;
    return Status::PermissionDenied("exec: " + program + " is not in this executor's exec_allow (" +
                                    (allowed.empty() ? "empty" : allowed) + ")");
  }
  std::error_code ec;
  fs::path root = opt.scratch_dir.empty() ? fs::temp_directory_path(ec) / "tailcut-scratch" : fs::path(opt.scratch_dir);
  fs::path scratch = root / ("attempt-" + std::to_string(ctx.attempt_id()) + "-" + std::to_string(getpid()));
  fs::remove_all(scratch, ec);  // a leftover of a crashed run with the same ids
  if (!fs::create_directories(scratch, ec) && ec)
    return Status::IoError("exec: cannot create scratch folder " + scratch.string() + ": " + ec.message());
  ChildSpec spec;
  spec.what = "exec";
  spec.path = program;
  spec.argv = args->argv;
  std::vector<std::string> env;
  for (const auto& [k, v] : args->env) env.push_back(k + "=" + v);
  // After the task's own: who it is cannot be overridden.
  for (std::string& e : TaskEnvironment(ctx)) env.push_back(std::move(e));
  env.push_back("TAILCUT_SCRATCH_DIR=" + scratch.string());
  env.push_back("TAILCUT_PROGRESS_FD=" + std::to_string(kProgressFd));
  if (Status s = WriteTaskInputs(ctx, (scratch / "inputs").string(), &env); !s.ok()) {
    fs::remove_all(scratch, ec);
    return Status::IoError("exec: " + s.message());
  }
  spec.env = MergeEnvironment(env);
  spec.cwd = args->cwd.empty() ? scratch.string() : args->cwd;
  spec.cpu_s = Tighter(args->cpu_s, opt.cpu_s);
  spec.memory_bytes = Tighter(args->memory_mb, opt.memory_mb) << 20;
  spec.memory_request_mb = ctx.memory_mb();
  spec.progress = true;
  StatusOr<std::string> out = RunChild(ctx, spec);
  fs::remove_all(scratch, ec);
  return out;
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

bool ExecAllowed(const std::vector<std::string>& allow, const std::string& program) {
  for (const std::string& a : allow)
    if (a == program || (!a.empty() && a.back() == '/' && program.size() > a.size() && program.rfind(a, 0) == 0))
      return true;
  return false;
}

Status RegisterBuiltinKernels(KernelRegistry* r, const ExecOptions& exec) {
  using Type = KernelArgSpec::Type;
  // What the key=value kernels take, as their code reads it above.
  const KernelArgSpec ms{"ms", Type::kNumber, 0, kMaxKernelMs};
  const KernelArgSpec seed{"seed", Type::kInteger};
  TableOfKernels kernels = {
      {"noop", [](KernelContext&) -> StatusOr<std::string> { return std::string(); },
       KernelTraits{.args = std::vector<KernelArgSpec>{}, .self_timed = true, .instant = true, .idempotent = true}},
      {"sleep", SleepKernel,
       KernelTraits{.args = std::vector<KernelArgSpec>{ms, {"sigma", Type::kNumber, 0, kMaxSigma}, seed},
                    .self_timed = true,
                    .idempotent = true}},
      {"spin", SpinKernel,
       KernelTraits{.args = std::vector<KernelArgSpec>{ms}, .self_timed = true, .idempotent = true}},
      {"matmul", MatmulKernel,
       KernelTraits{
           .args = std::vector<KernelArgSpec>{{"n", Type::kInteger, 1, static_cast<double>(kMatmulMaxN)}, seed},
           .idempotent = true}},
      {"shell", ShellKernel, {}},  // side effects: not idempotent
      {"exec", [exec](KernelContext& ctx) { return ExecKernel(ctx, exec); }, {}},
      {"coded_matmul", CodedMatmulKernel, KernelTraits{.idempotent = true}},
      {"gradient_worker", GradientWorkerKernel, KernelTraits{.idempotent = true}},
  };
  for (auto& [name, fn, traits] : kernels)
    if (Status s = r->Register(name, fn, traits); !s.ok()) return s;
  return Status::Ok();
}

KernelRegistry BuiltinKernels(const ExecOptions& exec) {
  KernelRegistry r;
  Status s = RegisterBuiltinKernels(&r, exec);  // an empty registry: cannot fail
  if (!s.ok()) internal::DieOnBadAccess(s);
  return r;
}

}  // namespace tailcut::executor
