// Kernels: the named functions an executor runs for attempts.
//
// A kernel receives a KernelContext (its argument bytes, cancellation,
// progress, cooperative sleep) and returns output bytes or an error Status.
// Kernels run as fibers: they must not block the worker thread for long
// (sleep via ctx.SleepFor, yield via ctx.Yield, hand blocking work to a
// thread or child process), so other attempts on the same thread progress.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tailcut/common/kernel_args.h"
#include "tailcut/common/status.h"

namespace tailcut::executor {

// A cancellation flag whose waiters wake as soon as it is raised. Fiber-aware:
// SleepFor suspends only the calling fiber; Cancel may be called from any
// thread.
class CancelToken {
 public:
  CancelToken();
  ~CancelToken();
  CancelToken(const CancelToken&) = delete;
  CancelToken& operator=(const CancelToken&) = delete;

  void Cancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  // Sleeps `seconds` of wall time or until cancelled. True if it slept fully.
  bool SleepFor(double seconds);

 private:
  // A Boost.Fiber mutex + condition variable, defined in kernel.cpp so that
  // Boost.Fiber stays out of the public headers.
  struct Waiters;
  std::atomic<bool> cancelled_{false};
  const std::unique_ptr<Waiters> waiters_;
};

// The attempt's part of a divisible job (docs/JOBS.md, "Speed-proportional
// work"): units [begin, begin + count) of total; total 0 = not divisible.
// The executor checks begin + count <= total before a kernel sees it.
struct KernelShare {
  uint64_t begin = 0;
  uint64_t count = 0;
  uint64_t total = 0;
  bool divisible() const { return total > 0; }
};

// An upstream task's committed output this attempt takes as input
// (Assignment.inputs, docs/JOBS.md "Task inputs").
struct KernelInput {
  uint64_t job_id = 0;
  uint32_t task_index = 0;
  std::string output;  // the upstream task's committed output bytes
  std::string path;    // its promoted output directory, "" when its job has none
};

// Who an attempt is (Assignment): what shell and exec tasks find in their
// environment as TAILCUT_JOB_ID, TAILCUT_TASK_INDEX, TAILCUT_TASK_COUNT,
// TAILCUT_ATTEMPT_ID and TAILCUT_IS_COPY (docs/KERNELS.md, "A task's
// identity").
struct KernelIdentity {
  uint64_t job_id = 0;
  uint32_t task_index = 0;
  uint32_t task_count = 0;  // tasks in the job; 0 when the scheduler did not say
  uint64_t attempt_id = 0;
  bool is_copy = false;     // a redundant copy of a running attempt
};

class KernelContext {
 public:
  // `time_factor` stretches SleepFor and reported durations (fault injection:
  // 2.0 makes sleep/spin kernels take twice as long).
  KernelContext(std::string_view args, CancelToken* cancel, double time_factor = 1.0)
      : args_(args), cancel_(cancel), time_factor_(time_factor) {}

  std::string_view args() const { return args_; }
  bool cancelled() const { return cancel_->cancelled(); }
  // Fraction done, clamped to 0..1; sent to the scheduler with heartbeats.
  void ReportProgress(float fraction);
  float progress() const { return progress_.load(std::memory_order_relaxed); }
  // The attempt's run time as the kernel measured it (the python kernel:
  // its worker's, the function alone); unset (< 0), the runtime's clock.
  void SetRunTime(double seconds) { run_s_ = seconds; }
  double run_time() const { return run_s_; }
  // Cooperative sleep of `seconds` × time_factor; false if cancelled.
  bool SleepFor(double seconds);
  // Lets other fibers on this thread run (call it in CPU loops).
  void Yield();
  double time_factor() const { return time_factor_; }

  // GPUs the attempt asked for (Resources.gpus) and the devices it holds,
  // its own while it runs (indices as this process sees them). Kernels with
  // a GPU twin take the GPU path on the first of them when gpus() >= 1 and
  // this executor has a CUDA device (docs/GPU.md); else they run on the CPU.
  void SetGpu(uint32_t gpus, std::vector<int> devices) {
    gpus_ = gpus;
    gpu_devices_ = std::move(devices);
  }
  void SetGpu(uint32_t gpus, int device) { SetGpu(gpus, std::vector<int>{device}); }
  // The attempt's memory request (Resources.memory_mb), 0 = none: program
  // kernels stop a task whose resident memory goes past it (docs/JOBS.md,
  // "Memory").
  void SetMemoryRequest(uint64_t memory_mb) { memory_mb_ = memory_mb; }
  uint64_t memory_mb() const { return memory_mb_; }
  void SetShare(KernelShare share) { share_ = share; }
  // The attempt's private output directory, "" when its job names no
  // output_dir (docs/JOBS.md, "Output directories"): write files here; only
  // the committed attempt's directory is promoted to <output_dir>/task-<i>.
  void SetOutputDir(std::string dir) { output_dir_ = std::move(dir); }
  const std::string& output_dir() const { return output_dir_; }
  // The attempt's inputs, in the order its TaskSpec.inputs name them.
  void SetInputs(const std::vector<KernelInput>* inputs) { inputs_ = inputs; }
  const std::vector<KernelInput>& inputs() const {
    static const std::vector<KernelInput> kNone;
    return inputs_ ? *inputs_ : kNone;
  }
  const KernelShare& share() const { return share_; }
  void SetIdentity(KernelIdentity id) { identity_ = id; }
  const KernelIdentity& identity() const { return identity_; }
  uint64_t job_id() const { return identity_.job_id; }
  uint32_t task_index() const { return identity_.task_index; }
  uint32_t task_count() const { return identity_.task_count; }
  uint64_t attempt_id() const { return identity_.attempt_id; }
  bool is_copy() const { return identity_.is_copy; }
  uint32_t gpus() const { return gpus_; }
  int gpu_device() const { return gpu_devices_.empty() ? 0 : gpu_devices_.front(); }
  const std::vector<int>& gpu_devices() const { return gpu_devices_; }
  // Set by a kernel that actually ran on the GPU (tests, logs).
  void MarkRanOnGpu() { ran_on_gpu_ = true; }
  bool ran_on_gpu() const { return ran_on_gpu_; }

 private:
  std::string_view args_;
  CancelToken* cancel_;
  double time_factor_;
  std::atomic<float> progress_{0.0f};
  double run_s_ = -1;
  uint32_t gpus_ = 0;
  std::vector<int> gpu_devices_;
  uint64_t memory_mb_ = 0;
  KernelShare share_;
  KernelIdentity identity_;
  std::string output_dir_;
  const std::vector<KernelInput>* inputs_ = nullptr;  // owned by the AttemptSpec
  bool ran_on_gpu_ = false;
};

// The attempt's identity as NAME=value environment entries: the TAILCUT_*
// variables above, TAILCUT_SHARE_OFFSET/SIZE/TOTAL for a share of a
// divisible job, and CUDA_VISIBLE_DEVICES for a GPU task (the devices it
// holds, comma-separated, mapped through the executor's own
// CUDA_VISIBLE_DEVICES if set; "" when it holds none, so it sees none).
std::vector<std::string> TaskEnvironment(const KernelContext& ctx);
// Writes the attempt's inputs into `dir` (created) for a program to read:
// file `<dir>/<i>` holds input i's output bytes, `<dir>/paths` one promoted
// directory per line (empty lines for none); appends TAILCUT_INPUT_DIR and
// TAILCUT_INPUT_COUNT to `env`. Nothing without inputs.
Status WriteTaskInputs(const KernelContext& ctx, const std::string& dir, std::vector<std::string>* env);

using KernelFn = std::function<StatusOr<std::string>(KernelContext&)>;

struct KernelTraits {
  // The key=value arguments it takes (docs/KERNELS.md, "Declared
  // arguments"), sent to the scheduler with the kernels this executor
  // offers (Register.kernel_args): a submit whose arguments no offering
  // executor's kernel takes is refused there. Unset: it takes anything (its
  // own format: shell, exec, python, plugin kernels).
  // First, so that a designated initializer naming only the flags below
  // leaves no trailing member out.
  std::optional<std::vector<KernelArgSpec>> args = std::nullopt;
  // The kernel applies ctx.time_factor() itself (sleep, spin). For the
  // others the runtime adds (factor-1) × measured run time after they return.
  bool self_timed = false;
  // Finishes instantly and never blocks (noop): the runtime may run it
  // inline, without a fiber, when nothing is queued ahead of it.
  bool instant = false;
  // Running an attempt twice is harmless (no side effects outside its
  // output): the scheduler may then copy, clone, hedge or restart its
  // tasks unless a job says otherwise. Registered with the scheduler
  // (Register.idempotent_kernels). False by default: the safe side for a
  // kernel that writes somewhere (docs/POLICIES.md, "Side effects").
  bool idempotent = false;
};

// Several queued attempts of one kernel handed over at once (the python
// kernel: one round trip to its worker for many tiny tasks, docs/PYTHON.md
// "Batches"). The kernel runs them in order on one slot, calls started(i)
// as attempt i starts and finished(i, out) as it ends, each at most once
// (finished without started: it never ran, a cancelled one skipped).
// Attempts it never calls finished for must not have started: the runtime
// queues them again, first in line (a worker lost mid-batch loses none of
// them); one started and left unfinished fails.
struct KernelBatch {
  std::vector<KernelContext*> ctx;
  std::function<void(size_t)> started;
  std::function<void(size_t, StatusOr<std::string>)> finished;
};
using KernelBatchFn = std::function<void(KernelBatch&)>;

struct Kernel {
  KernelFn fn;
  KernelTraits traits;
  KernelBatchFn batch{};  // set: the runtime may hand it several queued attempts at once
};

class KernelRegistry {
 public:
  // Fails if `name` is empty or already registered.
  Status Register(std::string name, KernelFn fn, KernelTraits traits = {});
  // The same, with a batch entry point the runtime uses when attempts of
  // `name` are queued behind each other (`fn` still runs single attempts).
  Status Register(std::string name, KernelFn fn, KernelBatchFn batch, KernelTraits traits = {});
  // Keeps only the kernels in `allowed` runnable (the executor's
  // allow_kernels); the rest stay known as disabled, so an assignment for one
  // is refused with how to enable it. An unknown name fails, naming every
  // unknown one, and changes nothing. May be called again with another list.
  Status Restrict(const std::vector<std::string>& allowed);
  // nullptr when unknown or disabled.
  const Kernel* Find(std::string_view name) const;
  // Registered, runnable or not.
  bool Knows(std::string_view name) const { return kernels_.count(name) || disabled_.count(name); }
  std::vector<std::string> Names() const;  // runnable ones, sorted
  // "noop, sleep, spin" — for error messages.
  std::string NamesList() const;
  // Why an attempt of `name` cannot run here (Find returned nullptr): the
  // kernel is disabled, and how to enable it, or unknown.
  std::string MissingReason(std::string_view name) const;

 private:
  std::map<std::string, Kernel, std::less<>> kernels_;
  std::map<std::string, Kernel, std::less<>> disabled_;  // registered, not allowed
};

// What the exec kernel may run, and the limits of its attempts (the
// executor's config, docs/CONFIG.md; docs/SECURITY.md, "exec").
struct ExecOptions {
  // exec_allow: programs (absolute paths) or folders (ending in '/') whose
  // programs may run; empty: none (every exec attempt fails, saying so).
  std::vector<std::string> allow;
  double cpu_s = 0;         // exec_cpu_s: RLIMIT_CPU of an attempt, at most; 0 = none
  uint64_t memory_mb = 0;   // exec_memory_mb: RLIMIT_AS of an attempt, at most; 0 = none
  std::string scratch_dir;  // scratch_dir: where per-attempt scratch folders go; "" = the temp folder
};
// Whether `program` (absolute, normalized) is in `allow`.
bool ExecAllowed(const std::vector<std::string>& allow, const std::string& program);

// noop, sleep, spin, matmul, shell, exec, coded_matmul, gradient_worker (see
// docs/KERNELS.md and docs/GPU.md). Fails if a name is already taken.
Status RegisterBuiltinKernels(KernelRegistry* registry, const ExecOptions& exec = {});
KernelRegistry BuiltinKernels(const ExecOptions& exec = {});
// What an executor runs unless its allow_kernels says otherwise: every
// built-in but shell and exec, which run any command a client sends
// (--allow-shell, --allow-exec).
std::vector<std::string> DefaultAllowedKernels();

// Registers the kernels of the kernel plugin at `path` (kernel_plugin_api.h,
// docs/KERNELS.md "Kernel plugins") and returns their names. They run only
// when listed in the executor's allow_kernels, like every kernel. Errors
// name the file: missing or unloadable, an entry point missing, built for
// another TAILCUT_KERNEL_PLUGIN_API_VERSION (both versions named), no
// kernels, or a name already registered (then nothing is registered).
StatusOr<std::vector<std::string>> LoadKernelPlugin(const std::string& path, KernelRegistry* registry);

// The matmul kernel's arithmetic, exposed for tests: the deterministic
// input matrix (row-major n×n) for `seed`, and the checksum (sum of C = A·B)
// computed with the blocked multiply.
std::vector<double> MatmulInput(int n, uint64_t seed);
double MatmulChecksum(const std::vector<double>& a, const std::vector<double>& b, int n);

// CUDA devices usable by this process: 0 when built without CUDA
// (TAILCUT_WITH_CUDA) or when no driver/device is present, with the reason
// in `why`. Probed once per process.
int GpuCount(std::string* why = nullptr);
bool BuiltWithCuda();
// Loads the CUDA module now (normally the first GPU attempt does; see
// docs/GPU.md) and returns the CUDA runtime's device count, or why it has
// none or cannot be loaded. For checks and tests: it starts CUDA.
StatusOr<int> CudaRuntimeDeviceCount();

}  // namespace tailcut::executor
