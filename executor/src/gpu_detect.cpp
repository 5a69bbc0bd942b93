#include "gpu_detect.h"

namespace tailcut::executor {

std::vector<wire::GpuInfo> DetectGpus() {
#ifdef TAILCUT_WITH_CUDA
  // TODO(cuda): enumerate devices with cudaGetDeviceCount/cudaGetDeviceProperties.
#endif
  return {};
}

}  // namespace tailcut::executor
