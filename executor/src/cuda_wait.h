// Waiting for a CUDA stream from a Boost.Fiber without blocking its thread.
// Only built with TAILCUT_WITH_CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "tailcut/cuda/gpu_ops.h"
#include "tailcut/executor/kernel.h"

namespace tailcut::executor {

// Records an event on `stream` and polls it with cudaEventQuery; between
// polls the calling fiber yields (first few polls) and then sleeps with
// boost::this_fiber::sleep_for, backing off from 20 us to 1 ms, so the
// other attempts on the same worker thread keep running. Returns "" when
// the work is done, "cancelled" as soon as `ctx` is cancelled (the work
// keeps running on the GPU; stream-ordered frees release its memory after
// it), or the CUDA error text.
std::string FiberWaitStream(cudaStream_t stream, const KernelContext& ctx);

// A StreamWait for the gpu_ops functions bound to `ctx`.
cuda::StreamWait FiberWaiter(const KernelContext& ctx);

}  // namespace tailcut::executor
