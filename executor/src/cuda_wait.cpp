#include "cuda_wait.h"

#include <algorithm>
#include <chrono>

#include <boost/fiber/operations.hpp>

namespace tailcut::executor {

std::string FiberWaitStream(cudaStream_t stream, const KernelContext& ctx) {
  cudaEvent_t done = nullptr;
  // Timing off: the cheapest event kind, only for completion queries.
  if (cudaError_t e = cudaEventCreateWithFlags(&done, cudaEventDisableTiming); e != cudaSuccess)
    return std::string("cudaEventCreate: ") + cudaGetErrorString(e);
  std::string result;
  if (cudaError_t e = cudaEventRecord(done, stream); e != cudaSuccess) {
    result = std::string("cudaEventRecord: ") + cudaGetErrorString(e);
  } else {
    auto backoff = std::chrono::microseconds(20);
    for (int polls = 0;; ++polls) {
      cudaError_t q = cudaEventQuery(done);
      if (q == cudaSuccess) break;
      if (q != cudaErrorNotReady) {
        result = std::string("CUDA stream failed: ") + cudaGetErrorString(q);
        break;
      }
      if (ctx.cancelled()) {
        result = "cancelled";
        break;
      }
      if (polls < 4) {
        boost::this_fiber::yield();  // short kernels: just let the others run once
      } else {
        boost::this_fiber::sleep_for(backoff);
        backoff = std::min(backoff * 2, std::chrono::microseconds(1000));
      }
    }
  }
  cudaEventDestroy(done);  // safe while pending: released when it completes
  return result;
}

cuda::StreamWait FiberWaiter(const KernelContext& ctx) {
  return [&ctx](cudaStream_t s) { return FiberWaitStream(s, ctx); };
}

}  // namespace tailcut::executor
