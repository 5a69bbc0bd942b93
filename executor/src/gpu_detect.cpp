// GPU discovery, probed once, without starting the CUDA runtime: NVML
// (loaded with dlopen, gpu_signals.cpp) lists the devices; the CUDA module
// (libtailcut_cuda.so, cuda_wait.h) is loaded only for the first GPU attempt,
// so an executor without a GPU never pays for CUDA (docs/GPU.md).
#include "gpu_detect.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

#include "tailcut/common/log.h"
#include "tailcut/executor/kernel.h"

#ifdef TAILCUT_WITH_CUDA
#include "cuda_wait.h"
#include "gpu_signals.h"
#endif

namespace tailcut::executor {
namespace {

#ifdef TAILCUT_WITH_CUDA
// libcuda.so.1 (the driver) is installed: cheap to ask, it is not kept.
bool DriverInstalled() {
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (lib) dlclose(lib);
  return lib != nullptr;
}
bool NvmlLoadable() {
  std::string why;
  NvmlGpus(&why);
  return why.rfind("NVML not available", 0) != 0;
}
#endif

struct Probe {
  std::vector<wire::GpuInfo> gpus;
  std::string why_none;
};

const Probe& GetProbe() {
  static const Probe probe = [] {
    Probe p;
#ifdef TAILCUT_WITH_CUDA
    std::string why;
    std::vector<NvmlGpu> seen = NvmlGpus(&why);
    std::vector<int> order;  // NVML indices CUDA will see, in CUDA's order
    for (size_t i = 0; i < seen.size(); ++i) order.push_back(static_cast<int>(i));
    // Counting through the CUDA module loads the CUDA runtime (~150 MiB):
    // only where NVML cannot answer. Names and memory are not read then.
    auto count_with_cuda = [&] {
      auto api = CudaModule();
      int n = api.ok() ? (*api)->device_count(&why) : 0;
      if (!api.ok()) why = api.status().message();
      seen.assign(static_cast<size_t>(std::max(n, 0)), NvmlGpu{});
      order.clear();
      for (int i = 0; i < n; ++i) {
        seen[static_cast<size_t>(i)].name = "CUDA device " + std::to_string(i);
        order.push_back(i);
      }
    };
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    if (seen.empty() && !NvmlLoadable() && DriverInstalled()) {
      count_with_cuda();  // a driver without NVML (e.g. Jetson boards)
    } else if (visible && !seen.empty()) {
      // CUDA's rule: the listed indices up to the first invalid one. UUID
      // and MIG forms need CUDA itself to resolve.
      order.clear();
      std::set<int> used;
      bool by_index = true;
      for (std::string rest = visible; !rest.empty();) {
        size_t comma = rest.find(',');
        std::string item = rest.substr(0, comma);
        rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
        if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos) {
          by_index = item.empty() || std::isdigit(static_cast<unsigned char>(item[0]));
          break;
        }
        int idx = std::atoi(item.c_str());
        if (idx >= static_cast<int>(seen.size()) || !used.insert(idx).second) break;
        order.push_back(idx);
      }
      if (!by_index) count_with_cuda();
      if (order.empty() && why.empty()) why = std::string("CUDA_VISIBLE_DEVICES=") + visible + " hides them all";
    }
    for (int i : order) {
      wire::GpuInfo g;
      g.set_index(static_cast<uint32_t>(p.gpus.size()));
      g.set_name(seen[static_cast<size_t>(i)].name);
      g.set_memory_bytes(seen[static_cast<size_t>(i)].memory_bytes);
      p.gpus.push_back(std::move(g));
    }
    if (p.gpus.empty()) p.why_none = "no CUDA device found: " + (why.empty() ? std::string("no usable device") : why);
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
  std::call_once(logged, [&] {  // [&]: p is unused without CUDA (clang warns)
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

StatusOr<int> CudaRuntimeDeviceCount() {
#ifdef TAILCUT_WITH_CUDA
  auto api = CudaModule();
  if (!api.ok()) return api.status();
  std::string error;
  int n = (*api)->device_count(&error);
  if (n == 0) return Status::Unavailable("CUDA runtime: " + error);
  return n;
#else
  return Status::Unavailable("built without CUDA");
#endif
}

bool BuiltWithCuda() {
#ifdef TAILCUT_WITH_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace tailcut::executor
