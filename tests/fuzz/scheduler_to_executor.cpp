// The executor's side of the wire: one SchedulerToExecutor as
// executor/src/executor.cpp takes it, and every assignment's kernel
// arguments parsed by the built-in kernel it names (docs/KERNELS.md).
#include "fuzz_targets.h"
#include "tailcut/common/kernel_args.h"
#include "tailcut/executor/kernel.h"
#include "tailcut/wire/wire.h"

namespace tailcut::fuzz {
namespace {

// matmul builds its n x n inputs before its first cancellation check:
// up to 2 x 128 MiB, seconds per input. Small n covers the same parsing.
constexpr int64_t kFuzzMaxMatmulN = 64;

// Runs the kernel on a cancelled attempt: it parses and checks its
// arguments, then stops at its first cancellation point instead of working.
void ParseAsKernel(const wire::Assignment& a) {
  static const executor::KernelRegistry registry = executor::BuiltinKernels();
  auto args = KernelArgs::Parse(a.args());
  if (a.kernel() == "shell") return;  // its argument is a command line; running it is its job
  if (a.kernel() == "matmul") {
    int64_t n = 128;
    if (!args.ok() || !args->GetInt("n", &n).ok() || n > kFuzzMaxMatmulN) return;
  }
  const executor::Kernel* k = registry.Find(a.kernel());
  if (!k) return;
  executor::CancelToken cancel;
  cancel.Cancel();
  executor::KernelContext ctx(a.args(), &cancel);
  ctx.SetGpu(a.demand().gpus(), 0);
  (void)k->fn(ctx);
}

}  // namespace

int SchedulerToExecutor(const uint8_t* data, size_t size) {
  Quiet();
  wire::SchedulerToExecutor in;
  if (!in.ParseFromArray(data, static_cast<int>(size)) || in.version() != kProtocolVersion) return 0;
  if (in.has_work())
    for (const wire::Assignment& a : in.work().assign()) ParseAsKernel(a);
  return 0;
}

}  // namespace tailcut::fuzz
