// Deliberately broken plugin for the loader's tests: no tailcut_plugin_create.
#include "tailcut/plugins/plugin_api.h"

extern "C" {
int tailcut_plugin_api_version(void) { return TAILCUT_PLUGIN_API_VERSION; }
void tailcut_plugin_destroy(tailcut::MitigationPolicy* p) { delete p; }
}
