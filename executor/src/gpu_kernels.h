// Kernels with a CPU and a GPU twin behind one name (docs/GPU.md).
#pragma once

#include <vector>

#include "tailcut/common/status.h"
#include "tailcut/executor/kernel.h"

namespace tailcut::executor {

// True when the attempt asked for a GPU and this process has one.
bool UseGpu(const KernelContext& ctx);

// The matmul checksum on the GPU (cuBLAS dgemm + a reduction), waiting as
// a fiber. Unavailable without CUDA.
StatusOr<double> GpuMatmulChecksum(const std::vector<double>& a, const std::vector<double>& b, int n,
                                   KernelContext& ctx);

// coded_matmul and gradient_worker (args/outputs as in tailcut/coding/task_args.h).
StatusOr<std::string> CodedMatmulKernel(KernelContext& ctx);
StatusOr<std::string> GradientWorkerKernel(KernelContext& ctx);

}  // namespace tailcut::executor
