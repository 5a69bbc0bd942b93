// Deliberately broken plugin for the tests of the core's policy boundary:
// `throwing` throws from its first OnTick. The scheduler must disable it
// with an error log and go on (docs/PLUGINS.md, "A policy that throws").
#include <stdexcept>

#include "tailcut/plugins/plugin_api.h"

namespace {

class Throwing final : public tailcut::MitigationPolicy {
 public:
  std::string_view name() const override { return "throwing"; }
  void OnTick(const tailcut::ClusterView&, std::vector<tailcut::Proposal>*) override {
    throw std::runtime_error("deliberate failure in the throwing plugin");
  }
};

}  // namespace

extern "C" {
int tailcut_plugin_api_version(void) { return TAILCUT_PLUGIN_API_VERSION; }
tailcut::MitigationPolicy* tailcut_plugin_create(const char*, const TailcutPluginHost*, char*, size_t) {
  return new Throwing();
}
void tailcut_plugin_destroy(tailcut::MitigationPolicy* p) { delete p; }
}
