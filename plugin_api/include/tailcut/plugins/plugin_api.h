// External mitigation policies in shared libraries (docs/PLUGINS.md).
//
// A plugin is a shared library (built against the same tailcut headers and
// the same C++ compiler / standard library as the host) that exports these
// extern "C" entry points:
//
//   int tailcut_plugin_api_version(void);
//       returns TAILCUT_PLUGIN_API_VERSION as compiled into the plugin.
//   tailcut::MitigationPolicy* tailcut_plugin_create(const char* name,
//       const TailcutPluginHost* host, char* err, size_t errlen);
//       a new policy `name` ("" = the plugin's default); on failure returns
//       null and writes a message into err (NUL-terminated, <= errlen bytes).
//   void tailcut_plugin_destroy(tailcut::MitigationPolicy* policy);
//       deletes a policy made by tailcut_plugin_create.
//
// The plugin reads its parameters through the host's callbacks, so it needs
// no tailcut library of its own: every ClusterView / MitigationPolicy call
// is virtual, and the Proposal:: factories are inline in policy.h. Plugins
// are loaded with RTLD_NOW | RTLD_LOCAL and
// stay loaded as long as a policy made from them lives.
//
// A plugin's policies are called on the scheduler core's thread only (like
// every MitigationPolicy): they need no locking of their own, and must not
// call the host from threads they start.
//
// Bump TAILCUT_PLUGIN_API_VERSION whenever policy.h, this header or the
// calling convention changes incompatibly; the loader refuses mismatches.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "tailcut/core/policy.h"

// 2: event hooks (OnAttemptLaunched/Started/Progress/Ended,
//    OnExecutorChanged, OnWakeUp), Proposal::WakeUp and Proposal::at, and
//    ClusterView::ForEachAttemptOn/FindAttempt/FreeSlots.
// 3: OnJobEnded.
#define TAILCUT_PLUGIN_API_VERSION 3

extern "C" {

// Host services handed to tailcut_plugin_create. Each getter returns 1 and
// sets *out when the key is present with the right type, 0 when absent
// (*out untouched: keep your default), -1 when present with a wrong type.
// Keys are relative to the policy's table: "delay_s" reads
// "<prefix>delay_s", where prefix is e.g. "policies.<name>.".
struct TailcutPluginHost {
  int api_version;     // the host's TAILCUT_PLUGIN_API_VERSION
  const char* prefix;  // config prefix of this policy, e.g. "policies.fixed_delay."
  const void* ctx;     // opaque; pass back to the getters
  int (*get_double)(const void* ctx, const char* key, double* out);
  int (*get_int)(const void* ctx, const char* key, long long* out);
  int (*get_bool)(const void* ctx, const char* key, int* out);
  // Copies at most len-1 bytes and a NUL into buf.
  int (*get_string)(const void* ctx, const char* key, char* buf, size_t len);
  // Logs a line through the host's logger (level: 0 debug, 1 info, 2 warn).
  void (*log)(const void* ctx, int level, const char* message);
};

typedef int (*TailcutPluginApiVersionFn)(void);
typedef tailcut::MitigationPolicy* (*TailcutPluginCreateFn)(const char* name, const TailcutPluginHost* host, char* err,
                                                            size_t errlen);
typedef void (*TailcutPluginDestroyFn)(tailcut::MitigationPolicy* policy);

}  // extern "C"

#include "tailcut/common/config.h"
#include "tailcut/common/shared_library.h"  // ResolvePluginPath: where a plugin path points
#include "tailcut/common/status.h"

namespace tailcut {

// Loads policy `name` from the plugin at `path`; the library stays loaded
// until the returned policy is destroyed. Parameters are read from `cfg`
// under `prefix` (default "policies.<name or file stem>."). Errors (never a
// crash): missing/unloadable file, missing entry point, API version
// mismatch, or the plugin's own create error — each naming the file.
StatusOr<std::unique_ptr<MitigationPolicy>> LoadPluginPolicy(const std::string& path, const std::string& name,
                                                             const Config& cfg, const std::string& prefix = "");

}  // namespace tailcut
