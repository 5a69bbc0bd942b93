// GPU twins: see include/tailcut/cuda/gpu_ops.h.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <memory>

#include "tailcut/cuda/gpu_ops.h"

namespace tailcut::cuda {
namespace {

std::string CudaError(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorString(e);
}

std::string CublasError(const char* what, cublasStatus_t s) {
  return std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s));
}

#define TC_CUDA(call)                                      \
  do {                                                     \
    cudaError_t e_ = (call);                               \
    if (e_ != cudaSuccess) return CudaError(#call, e_);    \
  } while (0)
#define TC_CUBLAS(call)                                          \
  do {                                                           \
    cublasStatus_t s_ = (call);                                  \
    if (s_ != CUBLAS_STATUS_SUCCESS) return CublasError(#call, s_); \
  } while (0)

// One cuBLAS handle per (host thread, device): creating one costs
// milliseconds. Fibers on a thread share it; each operation sets its stream
// right before queueing and never yields in between.
cublasHandle_t ThreadHandle(int device) {
  struct Handles {
    std::map<int, cublasHandle_t> by_device;
    ~Handles() {
      for (auto& [d, h] : by_device) cublasDestroy(h);
    }
  };
  thread_local Handles handles;
  auto it = handles.by_device.find(device);
  if (it != handles.by_device.end()) return it->second;
  cublasHandle_t h = nullptr;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return nullptr;
  handles.by_device[device] = h;
  return h;
}

// A stream plus stream-ordered device allocations, released in order on
// every exit path (also after a cancelled wait: the frees run after the work).
class Session {
 public:
  ~Session() {
    for (void* p : buffers_) cudaFreeAsync(p, stream_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  std::string Open(int device) {
    TC_CUDA(cudaSetDevice(device));
    TC_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    handle_ = ThreadHandle(device);
    if (!handle_) return "cublasCreate failed";
    return "";
  }
  std::string Alloc(double** p, size_t count) {
    void* raw = nullptr;
    TC_CUDA(cudaMallocAsync(&raw, count * sizeof(double) + 8, stream_));
    buffers_.push_back(raw);
    *p = static_cast<double*>(raw);
    return "";
  }
  std::string Upload(double** p, const double* host, size_t count) {
    if (std::string e = Alloc(p, count); !e.empty()) return e;
    if (count) TC_CUDA(cudaMemcpyAsync(*p, host, count * sizeof(double), cudaMemcpyHostToDevice, stream_));
    return "";
  }
  // Binds the shared handle to this stream: call right before cuBLAS calls.
  std::string Bind() {
    TC_CUBLAS(cublasSetStream(handle_, stream_));
    return "";
  }
  // Fiber wait for the queued work, then the (short) copy back.
  std::string Finish(const StreamWait& wait, double* host, const double* dev, size_t count) {
    if (std::string e = wait(stream_); !e.empty()) return e;
    TC_CUDA(cudaMemcpyAsync(host, dev, count * sizeof(double), cudaMemcpyDeviceToHost, stream_));
    TC_CUDA(cudaStreamSynchronize(stream_));  // the stream is idle: only the copy remains
    return "";
  }
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t handle() const { return handle_; }

 private:
  cudaStream_t stream_ = nullptr;
  cublasHandle_t handle_ = nullptr;
  std::vector<void*> buffers_;
};

// out[0] += sum of v[0..n): block tree reduction, one atomicAdd per block.
__global__ void SumKernel(const double* v, size_t n, double* out) {
  __shared__ double part[256];
  double s = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    s += v[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, part[0]);
}

// r[i] = sigmoid(r[i]) - y[i], overflow-safe.
__global__ void SigmoidMinusKernel(double* r, const double* y, long n) {
  long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  double z = r[i];
  double s = z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z));
  r[i] = s - y[i];
}

}  // namespace

int DeviceCount(std::string* error) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (error) *error = cudaGetErrorString(e);
    cudaGetLastError();  // clear the sticky-free error state
    return 0;
  }
  if (n == 0 && error) *error = "cudaGetDeviceCount returned 0";
  return n;
}

std::string MatmulChecksum(int device, const double* a, const double* b, int n, const StreamWait& wait,
                           double* checksum) {
  Session s;
  if (std::string e = s.Open(device); !e.empty()) return e;
  const size_t nn = static_cast<size_t>(n) * n;
  double *da, *db, *dc, *dsum;
  if (std::string e = s.Upload(&da, a, nn); !e.empty()) return e;
  if (std::string e = s.Upload(&db, b, nn); !e.empty()) return e;
  if (std::string e = s.Alloc(&dc, nn); !e.empty()) return e;
  if (std::string e = s.Alloc(&dsum, 1); !e.empty()) return e;
  TC_CUDA(cudaMemsetAsync(dsum, 0, sizeof(double), s.stream()));
  if (std::string e = s.Bind(); !e.empty()) return e;
  // Row-major C = A B is column-major C^T = B^T A^T.
  const double one = 1, zero = 0;
  TC_CUBLAS(cublasDgemm(s.handle(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, db, n, da, n, &zero, dc, n));
  SumKernel<<<std::min<size_t>((nn + 255) / 256, 1024), 256, 0, s.stream()>>>(dc, nn, dsum);
  TC_CUDA(cudaGetLastError());
  return s.Finish(wait, checksum, dsum, 1);
}

std::string MatVec(int device, const double* a, long rows, long cols, const double* x, const StreamWait& wait,
                   double* y) {
  Session s;
  if (std::string e = s.Open(device); !e.empty()) return e;
  double *da, *dx, *dy;
  if (std::string e = s.Upload(&da, a, static_cast<size_t>(rows * cols)); !e.empty()) return e;
  if (std::string e = s.Upload(&dx, x, static_cast<size_t>(cols)); !e.empty()) return e;
  if (std::string e = s.Alloc(&dy, static_cast<size_t>(rows)); !e.empty()) return e;
  TC_CUDA(cudaMemsetAsync(dy, 0, rows * sizeof(double) + 8, s.stream()));
  if (rows > 0 && cols > 0) {
    if (std::string e = s.Bind(); !e.empty()) return e;
    // Row-major A (rows x cols) is column-major A^T (cols x rows): y = (A^T)^T x.
    const double one = 1, zero = 0;
    TC_CUBLAS(cublasDgemv(s.handle(), CUBLAS_OP_T, static_cast<int>(cols), static_cast<int>(rows), &one, da,
                          static_cast<int>(cols), dx, 1, &zero, dy, 1));
  }
  return s.Finish(wait, y, dy, static_cast<size_t>(rows));
}

std::string CodedGradient(int device, bool logistic, long dim, const std::vector<GradPart>& parts, const double* w,
                          const StreamWait& wait, double* g) {
  Session s;
  if (std::string e = s.Open(device); !e.empty()) return e;
  double *dw, *dg;
  if (std::string e = s.Upload(&dw, w, static_cast<size_t>(dim)); !e.empty()) return e;
  if (std::string e = s.Alloc(&dg, static_cast<size_t>(dim)); !e.empty()) return e;
  TC_CUDA(cudaMemsetAsync(dg, 0, dim * sizeof(double), s.stream()));
  const int d = static_cast<int>(dim);
  for (const GradPart& p : parts) {
    if (p.rows == 0) continue;
    double *dx, *dr;
    if (std::string e = s.Upload(&dx, p.x, static_cast<size_t>(p.rows * dim)); !e.empty()) return e;
    // r starts as y: least squares computes r = X w - y in one dgemv.
    if (std::string e = s.Upload(&dr, p.y, static_cast<size_t>(p.rows)); !e.empty()) return e;
    double *dy = nullptr;
    if (logistic) {
      if (std::string e = s.Upload(&dy, p.y, static_cast<size_t>(p.rows)); !e.empty()) return e;
    }
    if (std::string e = s.Bind(); !e.empty()) return e;
    const double one = 1, minus_one = -1, zero = 0, coeff = p.coeff;
    const int rows = static_cast<int>(p.rows);
    // Row-major X (rows x dim) is column-major X^T (dim x rows).
    TC_CUBLAS(cublasDgemv(s.handle(), CUBLAS_OP_T, d, rows, &one, dx, d, dw, 1, logistic ? &zero : &minus_one, dr, 1));
    if (logistic) {
      SigmoidMinusKernel<<<static_cast<unsigned>((p.rows + 255) / 256), 256, 0, s.stream()>>>(dr, dy, p.rows);
      TC_CUDA(cudaGetLastError());
    }
    // g += coeff X^T r.
    TC_CUBLAS(cublasDgemv(s.handle(), CUBLAS_OP_N, d, rows, &coeff, dx, d, dr, 1, &one, dg, 1));
  }
  return s.Finish(wait, g, dg, static_cast<size_t>(dim));
}

namespace {

std::string EventRecord(void* stream, void** event) {
  cudaEvent_t done = nullptr;
  // Timing off: the cheapest event kind, only for completion queries.
  TC_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  if (cudaError_t e = cudaEventRecord(done, static_cast<cudaStream_t>(stream)); e != cudaSuccess) {
    cudaEventDestroy(done);
    return CudaError("cudaEventRecord", e);
  }
  *event = done;
  return "";
}

int EventQuery(void* event, std::string* error) {
  cudaError_t q = cudaEventQuery(static_cast<cudaEvent_t>(event));
  if (q == cudaSuccess) return 1;
  if (q == cudaErrorNotReady) return 0;
  if (error) *error = cudaGetErrorString(q);
  return -1;
}

void EventDestroy(void* event) { cudaEventDestroy(static_cast<cudaEvent_t>(event)); }

}  // namespace
}  // namespace tailcut::cuda

extern "C" __attribute__((visibility("default"))) const tailcut::cuda::Api* tailcut_cuda_api() {
  using namespace tailcut::cuda;
  static const Api api = [] {
    Api a;
    a.version = kApiVersion;
    a.device_count = &DeviceCount;
    a.matmul_checksum = &MatmulChecksum;
    a.mat_vec = &MatVec;
    a.coded_gradient = &CodedGradient;
    a.event_record = &EventRecord;
    a.event_query = &EventQuery;
    a.event_destroy = &EventDestroy;
    return a;
  }();
  return &api;
}
