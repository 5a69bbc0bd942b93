// The executor's side of the CUDA module (libtailcut_cuda.so, docs/GPU.md):
// loading it on first use, and waiting for a CUDA stream from a Boost.Fiber
// without blocking its thread. Only built with TAILCUT_WITH_CUDA.
#pragma once

#include <string>

#include "tailcut/common/status.h"
#include "tailcut/cuda/gpu_ops.h"
#include "tailcut/executor/kernel.h"

namespace tailcut::executor {

// The CUDA module's table, loaded (dlopen) on the first call; later calls
// return the same table or the same error. Tried in order: $TAILCUT_CUDA_MODULE,
// libtailcut_cuda.so next to the executable, in <exe dir>/../lib, the
// build tree's copy, then the dynamic loader's search path. Thread-safe.
// Loading it starts nothing on the GPU; the first CUDA call in it does.
StatusOr<const cuda::Api*> CudaModule();

// Records an event on `stream` and polls it (api.event_query); between
// polls the calling fiber yields (first few polls) and then sleeps with
// boost::this_fiber::sleep_for, backing off from 20 us to 1 ms, so the
// other attempts on the same worker thread keep running. Returns "" when
// the work is done, "cancelled" as soon as `ctx` is cancelled (the work
// keeps running on the GPU; stream-ordered frees release its memory after
// it), or the CUDA error text.
std::string FiberWaitStream(const cuda::Api& api, void* stream, const KernelContext& ctx);

// A StreamWait for the gpu_ops functions bound to `ctx`.
cuda::StreamWait FiberWaiter(const cuda::Api& api, const KernelContext& ctx);

}  // namespace tailcut::executor
