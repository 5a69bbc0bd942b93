#include "cuda_wait.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

#include <boost/fiber/operations.hpp>

#include "tailcut/common/log.h"

namespace tailcut::executor {
namespace {

std::string ExecutableDir() {
  std::string path(4096, '\0');
  ssize_t n = readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (n <= 0) return "";
  path.resize(static_cast<size_t>(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

StatusOr<const cuda::Api*> Load() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("TAILCUT_CUDA_MODULE"); env && *env) candidates.push_back(env);
  if (std::string dir = ExecutableDir(); !dir.empty()) {
    candidates.push_back(dir + "/" + cuda::kModuleName);
    candidates.push_back(dir + "/../lib/" + cuda::kModuleName);
  }
#ifdef TAILCUT_CUDA_MODULE_BUILD_PATH
  candidates.push_back(TAILCUT_CUDA_MODULE_BUILD_PATH);
#endif
  candidates.push_back(cuda::kModuleName);  // LD_LIBRARY_PATH, ld.so.cache
  std::string errors;
  for (const std::string& path : candidates) {
    // A path with a '/' is opened as is; skip the ones that are not there.
    if (path.find('/') != std::string::npos && access(path.c_str(), R_OK) != 0) continue;
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      errors += std::string(errors.empty() ? "" : "; ") + dlerror();
      continue;
    }
    auto entry = reinterpret_cast<const cuda::Api* (*)()>(dlsym(lib, cuda::kApiSymbol));
    const cuda::Api* api = entry ? entry() : nullptr;
    if (!api || api->version != cuda::kApiVersion) {
      errors += (errors.empty() ? "" : "; ") + path + ": not a tailcut CUDA module of this version";
      continue;
    }
    TC_LOG(Info) << "CUDA module loaded from " << path;
    return api;
  }
  return Status::Unavailable(std::string("cannot load the CUDA module ") + cuda::kModuleName + ": " +
                             (errors.empty() ? "not found" : errors));
}

}  // namespace

StatusOr<const cuda::Api*> CudaModule() {
  static const StatusOr<const cuda::Api*> module = Load();  // thread-safe static init
  return module;
}

std::string FiberWaitStream(const cuda::Api& api, void* stream, const KernelContext& ctx) {
  void* done = nullptr;
  if (std::string e = api.event_record(stream, &done); !e.empty()) return e;
  std::string result;
  auto backoff = std::chrono::microseconds(20);
  for (int polls = 0;; ++polls) {
    std::string error;
    int q = api.event_query(done, &error);
    if (q == 1) break;
    if (q < 0) {
      result = "CUDA stream failed: " + error;
      break;
    }
    if (ctx.cancelled()) {
      result = "cancelled";
      break;
    }
    if (polls < 4) {
      boost::this_fiber::yield();  // short kernels: just let the others run once
    } else {
      boost::this_fiber::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::microseconds(1000));
    }
  }
  api.event_destroy(done);  // safe while pending: released when it completes
  return result;
}

cuda::StreamWait FiberWaiter(const cuda::Api& api, const KernelContext& ctx) {
  return [&api, &ctx](void* s) { return FiberWaitStream(api, s, ctx); };
}

}  // namespace tailcut::executor
