// coded_matmul / gradient_worker for executors, and the GPU side of matmul.
// The CPU twins are tailcut_coding's Compute* functions (task_args.h); the
// GPU twins are in the CUDA module (executor/cuda, loaded on first use),
// awaited with FiberWaitStream.
#include "gpu_kernels.h"

#include "tailcut/coding/task_args.h"

#ifdef TAILCUT_WITH_CUDA
#include "cuda_wait.h"
#endif

namespace tailcut::executor {

bool UseGpu(const KernelContext& ctx) {
  return ctx.gpus() >= 1 && !ctx.gpu_devices().empty() && ctx.gpu_device() < GpuCount();
}

#ifdef TAILCUT_WITH_CUDA
namespace {
Status GpuStatus(const std::string& error) {
  if (error == "cancelled") return Status::Unavailable("cancelled");
  return Status::Internal("GPU: " + error);
}
// The loaded CUDA module (the first GPU attempt loads it), or why not.
#define TC_CUDA_API(api)                          \
  auto api##_or = CudaModule();                   \
  if (!api##_or.ok()) return api##_or.status();   \
  const cuda::Api& api = **api##_or
}  // namespace

StatusOr<double> GpuMatmulChecksum(const std::vector<double>& a, const std::vector<double>& b, int n,
                                   KernelContext& ctx) {
  TC_CUDA_API(api);
  double checksum = 0;
  std::string e = api.matmul_checksum(ctx.gpu_device(), a.data(), b.data(), n, FiberWaiter(api, ctx), &checksum);
  if (!e.empty()) return GpuStatus(e);
  ctx.MarkRanOnGpu();
  return checksum;
}
#else
StatusOr<double> GpuMatmulChecksum(const std::vector<double>&, const std::vector<double>&, int, KernelContext&) {
  return Status::Unavailable("built without CUDA");
}
#endif

StatusOr<std::string> CodedMatmulKernel(KernelContext& ctx) {
  auto t = coded::ParseMatmulArgs(std::string(ctx.args()));
  if (!t.ok()) return t.status();
  if (ctx.cancelled()) return Status::Unavailable("cancelled");
#ifdef TAILCUT_WITH_CUDA
  if (UseGpu(ctx)) {
    TC_CUDA_API(api);
    std::vector<double> y(static_cast<size_t>(t->rows));
    std::string e = api.mat_vec(ctx.gpu_device(), t->a.data(), t->rows, t->cols, t->x.data(), FiberWaiter(api, ctx),
                                y.data());
    if (!e.empty()) return GpuStatus(e);
    ctx.MarkRanOnGpu();
    ctx.ReportProgress(1.0f);
    return coded::EncodeVector(y);
  }
#endif
  std::vector<double> y = coded::ComputeMatVec(*t);
  ctx.ReportProgress(1.0f);
  return coded::EncodeVector(y);
}

StatusOr<std::string> GradientWorkerKernel(KernelContext& ctx) {
  std::string args(ctx.args());
  const KernelShare& share = ctx.share();
  // Share args (a divisible job): only the rows of this attempt's share.
  auto t = coded::IsShareGradientArgs(args)
               ? coded::ParseShareGradientArgs(args, share.begin, share.count, share.total)
               : coded::ParseGradientArgs(args);
  if (!t.ok()) return t.status();
  if (ctx.cancelled()) return Status::Unavailable("cancelled");
#ifdef TAILCUT_WITH_CUDA
  if (UseGpu(ctx)) {
    TC_CUDA_API(api);
    std::vector<cuda::GradPart> parts;
    for (size_t i = 0; i < t->parts.size(); ++i)
      parts.push_back({t->coeff[i], t->parts[i].x.rows(), t->parts[i].x.data().data(), t->parts[i].y.data()});
    std::vector<double> g(static_cast<size_t>(t->dim));
    std::string e = api.coded_gradient(ctx.gpu_device(), t->loss == coded::Loss::kLogistic, t->dim, parts,
                                       t->w.data(), FiberWaiter(api, ctx), g.data());
    if (!e.empty()) return GpuStatus(e);
    ctx.MarkRanOnGpu();
    ctx.ReportProgress(1.0f);
    return coded::EncodeVector(g);
  }
#endif
  std::vector<double> g = coded::ComputeGradient(*t);
  ctx.ReportProgress(1.0f);
  return coded::EncodeVector(g);
}

}  // namespace tailcut::executor
