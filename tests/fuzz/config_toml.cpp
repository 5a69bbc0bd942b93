// TOML config loaders: one text through each loader a daemon or the
// simulator runs on its config file, each on its own copy (a loader marks
// the keys it reads; the unknown-key check depends on that).
#include <string>

#include "fuzz_targets.h"
#include "tailcut/common/config.h"
#include "tailcut/executor/executor.h"
#include "daemon_config.h"
#include "tailcut/sim/scenario.h"

namespace tailcut::fuzz {
namespace {

// Plugin policies (plugin:PATH, [[policies.external]]) dlopen a path the
// config names: running arbitrary libraries is their purpose, not a bug.
bool NamesPlugin(Config cfg) {  // a copy: reading marks keys as used
  std::string chain;
  (void)cfg.Get("policies.chain", &chain);
  return chain.find("plugin") != std::string::npos || cfg.Has("policies.external") ||
         cfg.ArraySize("policies.external") > 0;
}

}  // namespace

int ConfigToml(const uint8_t* data, size_t size) {
  Quiet();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = Config::Parse(text, "<fuzz>");
  if (!parsed.ok() || NamesPlugin(*parsed)) return 0;
  {
    Config cfg = *parsed;
    ServerOptions options;
    (void)LoadDaemonConfig(cfg, &options);
  }
  {
    Config cfg = *parsed;
    if (executor::ExecutorOptionsFromConfig(cfg).ok()) (void)cfg.CheckAllUsed();
  }
  {
    Config cfg = *parsed;
    // A trace file is read from disk: point it nowhere so inputs stay pure.
    if (cfg.Has("workload.trace")) (void)cfg.Override("workload.trace=\"/nonexistent/fuzz.csv\"");
    (void)sim::ParseScenario(std::move(cfg), "/nonexistent");
  }
  return 0;
}

}  // namespace tailcut::fuzz
