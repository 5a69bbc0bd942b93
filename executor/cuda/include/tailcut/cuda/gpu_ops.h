// GPU twins of the executor's numeric kernels (cuBLAS + two small CUDA
// kernels), built as tailcut_cuda_kernels only when TAILCUT_WITH_CUDA.
//
// Every operation is asynchronous on a stream of its own: it queues the
// copies and the math, then calls `wait(stream)` — the executor passes a
// waiter that suspends only the calling Boost.Fiber until the stream is done
// (executor/src/cuda_wait.h) — and only then copies the (small) result back.
// Errors come back as text ("" = success), so this library needs nothing
// from the rest of tailcut.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <string>
#include <vector>

namespace tailcut::cuda {

// Returns "" once all work queued on `stream` has finished, or an error
// (e.g. "cancelled": the caller then abandons the result; device memory is
// freed stream-ordered, so nothing is released under running work).
using StreamWait = std::function<std::string(cudaStream_t)>;

// Number of usable CUDA devices (0 when there is no driver or device);
// `error` (optional) receives cudaGetErrorString of the failure.
int DeviceCount(std::string* error = nullptr);

// checksum = sum of all entries of C = A B (row-major n x n), cuBLAS dgemm.
std::string MatmulChecksum(int device, const double* a, const double* b, int n, const StreamWait& wait,
                           double* checksum);

// y (rows) = A x with A row-major rows x cols, cuBLAS dgemv.
std::string MatVec(int device, const double* a, long rows, long cols, const double* x, const StreamWait& wait,
                   double* y);

// g (dim) = sum_t coeff_t X_t^T r_t with r_t = X_t w - y_t (least squares)
// or sigmoid(X_t w) - y_t (logistic). X_t row-major rows x dim.
struct GradPart {
  double coeff = 1;
  long rows = 0;
  const double* x = nullptr;
  const double* y = nullptr;
};
std::string CodedGradient(int device, bool logistic, long dim, const std::vector<GradPart>& parts, const double* w,
                          const StreamWait& wait, double* g);

}  // namespace tailcut::cuda
