// hello_policy: an external policy that proposes nothing and says hello
// through the host's log when it is created, so a test can see it loaded.
#include <cstdio>
#include <cstring>

#include "tailcut/plugins/plugin_api.h"

namespace {

class Hello final : public tailcut::MitigationPolicy {
 public:
  std::string_view name() const override { return "hello"; }
};

}  // namespace

extern "C" {

int tailcut_plugin_api_version(void) { return TAILCUT_PLUGIN_API_VERSION; }

tailcut::MitigationPolicy* tailcut_plugin_create(const char* name, const TailcutPluginHost* host, char* err,
                                                  size_t errlen) {
  if (name && *name && std::strcmp(name, "hello") != 0) {
    if (errlen) std::snprintf(err, errlen, "unknown policy '%s' (this plugin offers: hello)", name);
    return nullptr;
  }
  char greeting[128] = "hello from an out-of-tree plugin";
  if (host->get_string(host->ctx, "greeting", greeting, sizeof greeting) < 0) {
    if (errlen) std::snprintf(err, errlen, "%sgreeting must be a string", host->prefix);
    return nullptr;
  }
  host->log(host->ctx, 1, greeting);
  return new Hello();
}

void tailcut_plugin_destroy(tailcut::MitigationPolicy* p) { delete p; }

}  // extern "C"
