// Kernel plugins (kernel_plugin_api.h): the C entry points of a shared
// library become KernelRegistry entries that keep the library loaded.
#include <algorithm>
#include <cstring>

#include "tailcut/common/log.h"
#include "tailcut/common/shared_library.h"
#include "tailcut/executor/kernel.h"
#include "tailcut/executor/kernel_plugin_api.h"

namespace tailcut::executor {
namespace {

// What the callbacks of one TailcutKernelCall reach.
struct CallHost {
  KernelContext* ctx;
  std::string output;
  const std::string* plugin;  // for log lines
};

CallHost* H(void* host) { return static_cast<CallHost*>(host); }

int Cancelled(void* host) { return H(host)->ctx->cancelled() ? 1 : 0; }
void ReportProgress(void* host, float fraction) { H(host)->ctx->ReportProgress(fraction); }
int SleepFor(void* host, double seconds) { return H(host)->ctx->SleepFor(seconds) ? 1 : 0; }
void Yield(void* host) { H(host)->ctx->Yield(); }
void SetOutput(void* host, const char* data, size_t len) { H(host)->output.assign(data ? data : "", data ? len : 0); }
void Log(void* host, int level, const char* message) {
  const std::string line = "kernel plugin " + *H(host)->plugin + ": " + (message ? message : "");
  if (level >= 2)
    TC_LOG(Warn) << line;
  else if (level == 1)
    TC_LOG(Info) << line;
  else
    TC_LOG(Debug) << line;
}

StatusOr<std::string> RunPluginKernel(TailcutKernelRunFn run, const std::string& plugin, KernelContext& ctx) {
  CallHost host{&ctx, {}, &plugin};
  const KernelShare& share = ctx.share();
  TailcutKernelCall call{};
  call.args = ctx.args().data();
  call.args_len = ctx.args().size();
  const KernelIdentity& id = ctx.identity();
  call.job_id = id.job_id;
  call.task_index = id.task_index;
  call.task_count = id.task_count;
  call.attempt_id = id.attempt_id;
  call.is_copy = id.is_copy ? 1 : 0;
  call.share_begin = share.begin;
  call.share_count = share.count;
  call.share_total = share.total;
  call.gpus = ctx.gpus();
  call.gpu_device = ctx.gpu_device();
  call.output_dir = ctx.output_dir().c_str();
  call.host = &host;
  call.cancelled = Cancelled;
  call.report_progress = ReportProgress;
  call.sleep_for = SleepFor;
  call.yield = Yield;
  call.set_output = SetOutput;
  call.log = Log;
  char err[2048] = {0};
  if (int rc = run(&call, err, sizeof err); rc != 0) {
    err[sizeof err - 1] = 0;
    return Status::Internal(err[0] ? std::string(err) : "kernel failed (code " + std::to_string(rc) + ", no message)");
  }
  return std::move(host.output);
}

}  // namespace

StatusOr<std::vector<std::string>> LoadKernelPlugin(const std::string& path, KernelRegistry* registry) {
  auto lib = SharedLibrary::Open(path, "kernel plugin");
  if (!lib.ok()) return lib.status();
  std::shared_ptr<SharedLibrary> library = std::move(lib).value();
  const std::string& where = library->where();
  auto version = library->EntryPoint("tailcut_kernel_plugin_api_version");
  auto kernels = library->EntryPoint("tailcut_kernel_plugin_kernels");
  for (const auto* fn : {&version, &kernels})
    if (!fn->ok()) return fn->status();
  Status v = library->CheckApiVersion(reinterpret_cast<TailcutKernelPluginApiVersionFn>(*version)(),
                                      TAILCUT_KERNEL_PLUGIN_API_VERSION);
  if (!v.ok()) return v;
  size_t count = 0;
  const TailcutKernelInfo* infos = reinterpret_cast<TailcutKernelPluginKernelsFn>(*kernels)(&count);
  if (!infos || count == 0) return Status::FailedPrecondition(where + ": offers no kernels");
  // Check every entry before registering any, so a bad plugin adds nothing.
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) {
    const TailcutKernelInfo& k = infos[i];
    std::string name = k.name ? k.name : "";
    if (name.empty() || !k.run)
      return Status::FailedPrecondition(where + ": kernel #" + std::to_string(i) + " has no name or no run function");
    if (registry->Knows(name) || std::find(names.begin(), names.end(), name) != names.end())
      return Status::InvalidArgument(where + ": kernel '" + name + "' is already registered");
    names.push_back(std::move(name));
  }
  for (size_t i = 0; i < count; ++i) {
    const TailcutKernelInfo& k = infos[i];
    KernelTraits traits;
    traits.self_timed = k.self_timed != 0;
    traits.idempotent = k.idempotent != 0;
    // The function owns a reference to the library: it stays loaded while
    // the registry (or a running attempt's copy of the function) lives.
    Status s = registry->Register(
        names[i], [library, run = k.run](KernelContext& ctx) { return RunPluginKernel(run, library->where(), ctx); },
        traits);
    if (!s.ok()) return Status::Internal(where + ": " + s.message());
  }
  return names;
}

}  // namespace tailcut::executor
