#include "tailcut/common/shared_library.h"

#include <dlfcn.h>

#include <filesystem>

namespace tailcut {

StatusOr<std::string> ResolvePluginPath(const std::string& path, const std::string& what) {
  if (path.empty()) return Status::InvalidArgument(what + ": empty path");
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  if (ec) return Status::NotFound(what + " '" + path + "': cannot resolve: " + ec.message());
  abs = abs.lexically_normal();
  const std::string where = what + " '" + path + "'" + (abs.string() == path ? "" : " (" + abs.string() + ")");
  if (!std::filesystem::exists(abs, ec)) return Status::NotFound(where + ": no such file");
  if (!std::filesystem::is_regular_file(abs, ec)) return Status::NotFound(where + ": not a regular file");
  return abs.string();
}

StatusOr<std::shared_ptr<SharedLibrary>> SharedLibrary::Open(const std::string& path, const std::string& what) {
  // The checked path is the opened one: an absolute path, so dlopen does
  // not search the library path.
  auto resolved = ResolvePluginPath(path, what);
  if (!resolved.ok()) return resolved.status();
  std::string where = what + " '" + path + "'";
  dlerror();
  void* handle = dlopen(resolved->c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    return Status::FailedPrecondition(where + ": cannot load: " + (e ? e : "unknown dlopen error"));
  }
  return std::shared_ptr<SharedLibrary>(new SharedLibrary(handle, what, std::move(where)));
}

SharedLibrary::~SharedLibrary() { dlclose(handle_); }

StatusOr<void*> SharedLibrary::EntryPoint(const char* name) const {
  dlerror();
  void* p = dlsym(handle_, name);
  if (dlerror() || !p)
    return Status::FailedPrecondition(where_ + ": missing entry point " + name + " (not a tailcut plugin?)");
  return p;
}

Status SharedLibrary::CheckApiVersion(int plugin_version, int host_version) const {
  if (plugin_version == host_version) return Status::Ok();
  return Status::FailedPrecondition(where_ + ": " + what_ + " API version " + std::to_string(plugin_version) +
                                    ", this tailcut supports " + std::to_string(host_version) +
                                    " (rebuild the plugin)");
}

}  // namespace tailcut
