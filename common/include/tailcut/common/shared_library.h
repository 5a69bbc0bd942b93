// Shared libraries loaded at run time: policy plugins (docs/PLUGINS.md) and
// kernel plugins (docs/KERNELS.md). One place resolves a plugin's path,
// opens it, finds its entry points and checks its API version, so both
// kinds fail with the same messages.
#pragma once

#include <memory>
#include <string>

#include "tailcut/common/status.h"

namespace tailcut {

// Where the plugin at `path` is, as SharedLibrary::Open both checks and
// opens it: a relative path is relative to the current directory, never
// looked up on the dynamic linker's search path (dlopen would search it for
// a name without a '/', so "libx.so" could pass a check of ./libx.so and
// load another file). The absolute, normalized path of a regular file, else
// NotFound naming `path` and where it was looked for ("<what> '<path>'").
StatusOr<std::string> ResolvePluginPath(const std::string& path, const std::string& what = "plugin");

// A dlopen(RTLD_NOW | RTLD_LOCAL)ed library, closed when the last owner goes.
class SharedLibrary {
 public:
  // `what` names the kind in messages ("plugin", "kernel plugin").
  static StatusOr<std::shared_ptr<SharedLibrary>> Open(const std::string& path, const std::string& what = "plugin");
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  // The entry point `name`, or FailedPrecondition "missing entry point NAME
  // (not a tailcut plugin?)".
  StatusOr<void*> EntryPoint(const char* name) const;
  // Ok when the plugin was built for `host_version`, else FailedPrecondition
  // naming both: "<what> API version N, this tailcut supports M (rebuild
  // the plugin)".
  Status CheckApiVersion(int plugin_version, int host_version) const;
  // "plugin '<path as given>'", the prefix of every message about it.
  const std::string& where() const { return where_; }

 private:
  SharedLibrary(void* handle, std::string what, std::string where)
      : handle_(handle), what_(std::move(what)), where_(std::move(where)) {}
  void* handle_;
  std::string what_;
  std::string where_;
};

}  // namespace tailcut
