// GPU health readings for heartbeats (NodeSignals.gpu_throttle_reasons).
#pragma once

#include <cstdint>

namespace tailcut::executor {

// OR of NVML's clock-event (throttle) reason bits over all GPUs, without the
// benign ones (GPU idle, application clocks setting). NVML is loaded at run
// time with dlopen("libnvidia-ml.so.1"): without it (no driver, CPU-only
// machine) this returns 0 and never retries. Thread-safe; cheap (one NVML
// query per device).
uint32_t ReadGpuThrottleReasons();
// Whether NVML could be loaded and initialised.
bool NvmlAvailable();

}  // namespace tailcut::executor
