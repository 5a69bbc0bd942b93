#include <cstring>
#include <filesystem>

#include "tailcut/common/shared_library.h"

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

// Owns the plugin's policy and keeps its library loaded.
class PluginPolicy final : public MitigationPolicy {
 public:
  PluginPolicy(std::shared_ptr<SharedLibrary> lib, MitigationPolicy* p, TailcutPluginDestroyFn destroy)
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
  void OnJobEnded(const ClusterView& v, JobId job, JobState state, std::vector<Proposal>* out) override {
    p_->OnJobEnded(v, job, state, out);
  }
  bool AvoidExecutor(const ClusterView& v, ExecutorId e) const override { return p_->AvoidExecutor(v, e); }

 private:
  std::shared_ptr<SharedLibrary> lib_;
  MitigationPolicy* p_;
  TailcutPluginDestroyFn destroy_;
};

}  // namespace

StatusOr<std::unique_ptr<MitigationPolicy>> LoadPluginPolicy(const std::string& path, const std::string& name,
                                                             const Config& cfg, const std::string& prefix_in) {
  auto lib = SharedLibrary::Open(path);
  if (!lib.ok()) return lib.status();
  const std::string& where = (*lib)->where();
  auto version = (*lib)->EntryPoint("tailcut_plugin_api_version");
  auto create = (*lib)->EntryPoint("tailcut_plugin_create");
  auto destroy = (*lib)->EntryPoint("tailcut_plugin_destroy");
  for (const auto* fn : {&version, &create, &destroy})
    if (!fn->ok()) return fn->status();
  Status v =
      (*lib)->CheckApiVersion(reinterpret_cast<TailcutPluginApiVersionFn>(*version)(), TAILCUT_PLUGIN_API_VERSION);
  if (!v.ok()) return v;
  std::string stem = std::filesystem::path(path).stem().string();
  HostCtx ctx{&cfg, prefix_in.empty() ? "policies." + (name.empty() ? stem : name) + "." : prefix_in};
  TailcutPluginHost host{
      TAILCUT_PLUGIN_API_VERSION, ctx.prefix.c_str(), &ctx, GetDouble, GetInt, GetBool, GetString, Log};
  char err[512] = {0};
  MitigationPolicy* p = reinterpret_cast<TailcutPluginCreateFn>(*create)(name.c_str(), &host, err, sizeof err);
  if (!p) {
    err[sizeof err - 1] = 0;
    return Status::InvalidArgument(where + ": cannot create policy '" + name +
                                   "': " + (err[0] ? err : "no reason given"));
  }
  auto destroy_fn = reinterpret_cast<TailcutPluginDestroyFn>(*destroy);
  return std::unique_ptr<MitigationPolicy>(std::make_unique<PluginPolicy>(std::move(lib).value(), p, destroy_fn));
}

}  // namespace tailcut
