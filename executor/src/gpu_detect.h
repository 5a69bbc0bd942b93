// Hook for accelerator discovery, reported in Register.gpus.
#pragma once

#include <vector>

#include "tailcut.pb.h"

namespace tailcut::executor {

// The GPUs this executor offers. Empty unless built with CUDA support
// (TAILCUT_WITH_CUDA); the CUDA build replaces the body in gpu_detect.cpp.
std::vector<wire::GpuInfo> DetectGpus();

}  // namespace tailcut::executor
