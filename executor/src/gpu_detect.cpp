// GPU discovery through the CUDA runtime (TAILCUT_WITH_CUDA), probed once.
#include "gpu_detect.h"

#include <mutex>

#include "tailcut/common/log.h"
#include "tailcut/executor/kernel.h"

#ifdef TAILCUT_WITH_CUDA
#include <cuda_runtime_api.h>

#include "tailcut/cuda/gpu_ops.h"
#endif

namespace tailcut::executor {
namespace {

struct Probe {
  std::vector<wire::GpuInfo> gpus;
  std::string why_none;
};

const Probe& GetProbe() {
  static const Probe probe = [] {
    Probe p;
#ifdef TAILCUT_WITH_CUDA
    std::string error;
    int n = cuda::DeviceCount(&error);
    for (int i = 0; i < n; ++i) {
      cudaDeviceProp prop{};
      if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
      wire::GpuInfo g;
      g.set_index(static_cast<uint32_t>(i));
      g.set_name(prop.name);
      g.set_memory_bytes(prop.totalGlobalMem);
      p.gpus.push_back(std::move(g));
    }
    if (p.gpus.empty()) p.why_none = "no CUDA device found: " + (error.empty() ? std::string("no usable device") : error);
#else
    p.why_none = "built without CUDA (TAILCUT_CUDA=OFF or no nvcc)";
#endif
    return p;
  }();
  return probe;
}

}  // namespace

std::vector<wire::GpuInfo> DetectGpus() {
  const Probe& p = GetProbe();
  static std::once_flag logged;
  std::call_once(logged, [&p] {
#ifdef TAILCUT_WITH_CUDA
    if (p.gpus.empty()) {
      TC_LOG(Info) << p.why_none << "; advertising 0 GPUs";
    } else {
      for (const auto& g : p.gpus)
        TC_LOG(Info) << "GPU " << g.index() << ": " << g.name() << ", " << (g.memory_bytes() >> 20) << " MiB";
    }
#endif
  });
  return p.gpus;
}

int GpuCount(std::string* why) {
  const Probe& p = GetProbe();
  if (why) *why = p.why_none;
  return static_cast<int>(p.gpus.size());
}

bool BuiltWithCuda() {
#ifdef TAILCUT_WITH_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace tailcut::executor
