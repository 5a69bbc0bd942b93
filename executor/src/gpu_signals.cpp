// NVML without a build-time dependency: the few entry points are declared
// here and resolved with dlsym, so the executor runs on machines without
// libnvidia-ml (and builds without nvml.h, which CUDA 13 toolkits may lack).
#include "gpu_signals.h"

#include <dlfcn.h>

#include <mutex>
#include <string>
#include <vector>

#include "tailcut/common/log.h"

namespace tailcut::executor {
namespace {

using nvmlReturn = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
using nvmlDevice = void*;
constexpr unsigned long long kIdle = 0x1ULL;                    // nvmlClocksEventReasonGpuIdle
constexpr unsigned long long kAppClocks = 0x2ULL;               // ...ApplicationsClocksSetting
constexpr unsigned long long kBenign = kIdle | kAppClocks;

struct NvmlMemory {  // nvmlMemory_t (v1)
  unsigned long long total, free, used;
};

struct Nvml {
  bool ok = false;
  std::vector<nvmlDevice> devices;
  std::vector<NvmlGpu> gpus;  // name and memory of each device
  std::string why_none;       // when `devices` is empty
  nvmlReturn (*reasons)(nvmlDevice, unsigned long long*) = nullptr;
  std::mutex mu;
};

Nvml& Load() {
  static Nvml nvml;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      nvml.why_none = std::string("NVML not available (") + dlerror() + ")";
      TC_LOG(Debug) << nvml.why_none << "; no GPU throttle signals";
      return;
    }
    auto init = reinterpret_cast<nvmlReturn (*)()>(dlsym(lib, "nvmlInit_v2"));
    auto count = reinterpret_cast<nvmlReturn (*)(unsigned*)>(dlsym(lib, "nvmlDeviceGetCount_v2"));
    auto handle = reinterpret_cast<nvmlReturn (*)(unsigned, nvmlDevice*)>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    // Newer drivers: ClocksEventReasons; older ones: ClocksThrottleReasons (same bits).
    void* reasons = dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!reasons) reasons = dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    auto name = reinterpret_cast<nvmlReturn (*)(nvmlDevice, char*, unsigned)>(dlsym(lib, "nvmlDeviceGetName"));
    auto memory = reinterpret_cast<nvmlReturn (*)(nvmlDevice, NvmlMemory*)>(dlsym(lib, "nvmlDeviceGetMemoryInfo"));
    unsigned n = 0;
    if (!init || !count || !handle || init() != 0 || count(&n) != 0) {
      nvml.why_none = "NVML present but unusable";
      TC_LOG(Info) << nvml.why_none << "; no GPU throttle signals";
      return;
    }
    for (unsigned i = 0; i < n; ++i) {
      nvmlDevice d = nullptr;
      if (handle(i, &d) != 0) continue;
      nvml.devices.push_back(d);
      NvmlGpu g;
      char buf[96] = {};
      g.name = name && name(d, buf, sizeof buf) == 0 ? buf : "GPU " + std::to_string(i);
      NvmlMemory m{};
      if (memory && memory(d, &m) == 0) g.memory_bytes = m.total;
      nvml.gpus.push_back(std::move(g));
    }
    if (nvml.devices.empty()) nvml.why_none = "NVML found no GPU";
    nvml.reasons = reinterpret_cast<nvmlReturn (*)(nvmlDevice, unsigned long long*)>(reasons);
    nvml.ok = !nvml.devices.empty() && nvml.reasons;
    if (!nvml.ok) return;
    TC_LOG(Info) << "NVML: reading clock throttle reasons of " << nvml.devices.size() << " GPU(s)";
  });
  return nvml;
}

}  // namespace

bool NvmlAvailable() { return Load().ok; }

std::vector<NvmlGpu> NvmlGpus(std::string* why) {
  Nvml& nvml = Load();
  if (why) *why = nvml.why_none;
  return nvml.gpus;
}

uint32_t ReadGpuThrottleReasons() {
  Nvml& nvml = Load();
  if (!nvml.ok) return 0;
  std::lock_guard<std::mutex> lock(nvml.mu);
  unsigned long long all = 0;
  for (nvmlDevice d : nvml.devices) {
    unsigned long long r = 0;
    if (nvml.reasons(d, &r) == 0) all |= r;
  }
  return static_cast<uint32_t>(all & ~kBenign);
}

}  // namespace tailcut::executor
