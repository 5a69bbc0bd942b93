#include <dlfcn.h>

#include <cstring>
#include <filesystem>

#include "tailcut/common/log.h"
#include "tailcut/plugins/plugin_api.h"

namespace tailcut {
namespace {

struct HostCtx {
  const Config* cfg;
  std::string prefix;
};

template <typename T>
int GetAs(const void* ctx, const char* key, T* out) {
  auto* c = static_cast<const HostCtx*>(ctx);
  std::string k = c->prefix + key;
  if (!c->cfg->Has(k)) return 0;
  return c->cfg->Get(k, out).ok() ? 1 : -1;
}

int GetDouble(const void* ctx, const char* key, double* out) { return GetAs(ctx, key, out); }
int GetInt(const void* ctx, const char* key, long long* out) {
  int64_t v = 0;
  int r = GetAs(ctx, key, &v);
  if (r == 1) *out = v;
  return r;
}
int GetBool(const void* ctx, const char* key, int* out) {
  bool v = false;
  int r = GetAs(ctx, key, &v);
  if (r == 1) *out = v;
  return r;
}
int GetString(const void* ctx, const char* key, char* buf, size_t len) {
  std::string v;
  int r = GetAs(ctx, key, &v);
  if (r == 1 && len > 0) {
    size_t n = std::min(v.size(), len - 1);
    std::memcpy(buf, v.data(), n);
    buf[n] = 0;
  }
  return r;
}
void Log(const void* ctx, int level, const char* msg) {
  auto* c = static_cast<const HostCtx*>(ctx);
  if (level >= 2)
    TC_LOG(Warn) << "plugin " << c->prefix << ": " << msg;
  else if (level == 1)
    TC_LOG(Info) << "plugin " << c->prefix << ": " << msg;
  else
    TC_LOG(Debug) << "plugin " << c->prefix << ": " << msg;
}

// Closes the library when the last policy made from it is gone.
struct Library {
  void* handle = nullptr;
  ~Library() {
    if (handle) dlclose(handle);
  }
};

// Owns the plugin's policy and keeps its library loaded.
class PluginPolicy final : public MitigationPolicy {
 public:
  PluginPolicy(std::shared_ptr<Library> lib, MitigationPolicy* p, TailcutPluginDestroyFn destroy)
      : lib_(std::move(lib)), p_(p), destroy_(destroy) {}
  ~PluginPolicy() override { destroy_(p_); }  // before lib_ is released
  std::string_view name() const override { return p_->name(); }
  void OnJobSubmitted(const ClusterView& v, JobId j, std::vector<Proposal>* out) override {
    p_->OnJobSubmitted(v, j, out);
  }
  void OnTick(const ClusterView& v, std::vector<Proposal>* out) override { p_->OnTick(v, out); }
  void OnAttemptLaunched(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override {
    p_->OnAttemptLaunched(v, a, out);
  }
  void OnAttemptStarted(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override {
    p_->OnAttemptStarted(v, a, out);
  }
  void OnAttemptProgress(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override {
    p_->OnAttemptProgress(v, a, out);
  }
  void OnAttemptEnded(const ClusterView& v, const AttemptView& a, const AttemptEnd& end,
                      std::vector<Proposal>* out) override {
    p_->OnAttemptEnded(v, a, end, out);
  }
  void OnExecutorChanged(const ClusterView& v, ExecutorId e, ExecutorChange c, std::vector<Proposal>* out) override {
    p_->OnExecutorChanged(v, e, c, out);
  }
  void OnWakeUp(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override {
    p_->OnWakeUp(v, a, out);
  }
  bool AvoidExecutor(const ClusterView& v, ExecutorId e) const override { return p_->AvoidExecutor(v, e); }

 private:
  std::shared_ptr<Library> lib_;
  MitigationPolicy* p_;
  TailcutPluginDestroyFn destroy_;
};

}  // namespace

StatusOr<std::string> ResolvePluginPath(const std::string& path) {
  if (path.empty()) return Status::InvalidArgument("plugin: empty path");
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  if (ec) return Status::NotFound("plugin '" + path + "': cannot resolve: " + ec.message());
  abs = abs.lexically_normal();
  const std::string where = "plugin '" + path + "'" + (abs.string() == path ? "" : " (" + abs.string() + ")");
  if (!std::filesystem::exists(abs, ec)) return Status::NotFound(where + ": no such file");
  if (!std::filesystem::is_regular_file(abs, ec)) return Status::NotFound(where + ": not a regular file");
  return abs.string();
}

StatusOr<std::unique_ptr<MitigationPolicy>> LoadPluginPolicy(const std::string& path, const std::string& name,
                                                             const Config& cfg, const std::string& prefix_in) {
  // The checked path is the opened one: an absolute path, so dlopen does
  // not search the library path.
  auto resolved = ResolvePluginPath(path);
  if (!resolved.ok()) return resolved.status();
  std::string where = "plugin '" + path + "'";
  dlerror();
  auto lib = std::make_shared<Library>();
  lib->handle = dlopen(resolved->c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle) {
    const char* e = dlerror();
    return Status::FailedPrecondition(where + ": cannot load: " + (e ? e : "unknown dlopen error"));
  }
  auto sym = [&](const char* s) -> void* {
    dlerror();
    void* p = dlsym(lib->handle, s);
    return dlerror() ? nullptr : p;
  };
  auto version = reinterpret_cast<TailcutPluginApiVersionFn>(sym("tailcut_plugin_api_version"));
  auto create = reinterpret_cast<TailcutPluginCreateFn>(sym("tailcut_plugin_create"));
  auto destroy = reinterpret_cast<TailcutPluginDestroyFn>(sym("tailcut_plugin_destroy"));
  for (auto [fn, s] : {std::pair{reinterpret_cast<void*>(version), "tailcut_plugin_api_version"},
                       std::pair{reinterpret_cast<void*>(create), "tailcut_plugin_create"},
                       std::pair{reinterpret_cast<void*>(destroy), "tailcut_plugin_destroy"}})
    if (!fn) return Status::FailedPrecondition(where + ": missing entry point " + s + " (not a tailcut plugin?)");
  int v = version();
  if (v != TAILCUT_PLUGIN_API_VERSION)
    return Status::FailedPrecondition(where + ": plugin API version " + std::to_string(v) + ", this tailcut supports " +
                                      std::to_string(TAILCUT_PLUGIN_API_VERSION) + " (rebuild the plugin)");
  std::string stem = std::filesystem::path(path).stem().string();
  HostCtx ctx{&cfg, prefix_in.empty() ? "policies." + (name.empty() ? stem : name) + "." : prefix_in};
  TailcutPluginHost host{TAILCUT_PLUGIN_API_VERSION, ctx.prefix.c_str(), &ctx, GetDouble, GetInt, GetBool, GetString,
                         Log};
  char err[512] = {0};
  MitigationPolicy* p = create(name.c_str(), &host, err, sizeof err);
  if (!p) {
    err[sizeof err - 1] = 0;
    return Status::InvalidArgument(where + ": cannot create policy '" + name + "': " + (err[0] ? err : "no reason given"));
  }
  return std::unique_ptr<MitigationPolicy>(std::make_unique<PluginPolicy>(std::move(lib), p, destroy));
}

}  // namespace tailcut
