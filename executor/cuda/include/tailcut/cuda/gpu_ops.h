// GPU twins of the executor's numeric kernels (cuBLAS + two small CUDA
// kernels), built only when TAILCUT_WITH_CUDA as the shared module
// libtailcut_cuda.so. The executor does not link it: it dlopens it on the
// first GPU attempt and calls it through the table tailcut_cuda_api()
// returns (docs/GPU.md), so a process that never runs GPU work never loads
// the CUDA runtime. No CUDA header is needed to include this one (streams
// and events are void*).
//
// Every operation is asynchronous on a stream of its own: it queues the
// copies and the math, then calls `wait(stream)` — the executor passes a
// waiter that suspends only the calling Boost.Fiber until the stream is done
// (executor/src/cuda_wait.h) — and only then copies the (small) result back.
// Errors come back as text ("" = success), so this library needs nothing
// from the rest of tailcut. Thread-safe: the executor's worker threads call
// it at once, each operation on its own stream and buffers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tailcut::cuda {

// Returns "" once all work queued on `stream` has finished, or an error
// (e.g. "cancelled": the caller then abandons the result; device memory is
// freed stream-ordered, so nothing is released under running work).
using StreamWait = std::function<std::string(void* stream)>;  // stream: a cudaStream_t

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

// What the module exports, as one table (see tailcut_cuda_api below). Both
// sides are built together by one compiler, so C++ types may cross.
struct Api {
  uint32_t version = 0;  // kApiVersion of the module
  int (*device_count)(std::string* error) = nullptr;
  decltype(&MatmulChecksum) matmul_checksum = nullptr;
  decltype(&MatVec) mat_vec = nullptr;
  decltype(&CodedGradient) coded_gradient = nullptr;
  // For a waiter that polls instead of blocking (executor/src/cuda_wait.cpp):
  // record a new event on `stream`; query it (1 done, 0 not yet, -1 error
  // with *error set); destroy it (safe while pending).
  std::string (*event_record)(void* stream, void** event) = nullptr;
  int (*event_query)(void* event, std::string* error) = nullptr;
  void (*event_destroy)(void* event) = nullptr;
};
inline constexpr uint32_t kApiVersion = 1;
inline constexpr const char* kModuleName = "libtailcut_cuda.so";
inline constexpr const char* kApiSymbol = "tailcut_cuda_api";

}  // namespace tailcut::cuda

// The module's one export (dlsym(kApiSymbol)); never null.
extern "C" const tailcut::cuda::Api* tailcut_cuda_api();
