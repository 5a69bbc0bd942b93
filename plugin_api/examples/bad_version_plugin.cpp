// Deliberately broken plugin for the loader's tests: wrong API version.
#include "tailcut/plugins/plugin_api.h"

extern "C" {
int tailcut_plugin_api_version(void) { return TAILCUT_PLUGIN_API_VERSION + 41; }
tailcut::MitigationPolicy* tailcut_plugin_create(const char*, const TailcutPluginHost*, char*, size_t) {
  return nullptr;
}
void tailcut_plugin_destroy(tailcut::MitigationPolicy* p) { delete p; }
}
