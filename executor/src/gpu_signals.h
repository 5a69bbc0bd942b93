// GPU health readings for heartbeats (NodeSignals.gpu_throttle_reasons).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tailcut::executor {

// OR of NVML's clock-event (throttle) reason bits over all GPUs, without the
// benign ones (GPU idle, application clocks setting). NVML is loaded at run
// time with dlopen("libnvidia-ml.so.1"): without it (no driver, CPU-only
// machine) this returns 0 and never retries. Thread-safe; cheap (one NVML
// query per device).
uint32_t ReadGpuThrottleReasons();
// Whether NVML could be loaded and initialised and reads throttle reasons.
bool NvmlAvailable();

// The GPUs NVML sees, in NVML's order (PCI bus id), without starting the
// CUDA runtime (GPU discovery, gpu_detect.cpp); empty when NVML is missing
// or finds none, with `why` (optional) saying which.
struct NvmlGpu {
  std::string name;
  uint64_t memory_bytes = 0;
};
std::vector<NvmlGpu> NvmlGpus(std::string* why = nullptr);

}  // namespace tailcut::executor
