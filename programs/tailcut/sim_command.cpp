// `tailcut sim`: argument conversion only; the simulator lives in sim/.
#include <cstdlib>

#include "commands.h"
#include "tailcut/sim/command.h"

namespace tailcut::cli {

int RunSim(const Args& args) {
  sim::SimCommandOptions o;
  o.help = args.Has("--help") || args.Has("-h");
  if (args.positional().size() > 1) {
    std::fprintf(stderr, "tailcut sim: one scenario file, please (got %zu)\n", args.positional().size());
    return kExitUsage;
  }
  if (!args.positional().empty()) o.scenario = args.positional()[0];
  // Repeated --policy flags add up: --policy none --policy spark.
  std::string policies;
  for (const std::string& p : args.GetAll("--policy")) policies += (policies.empty() ? "" : ",") + p;
  if (!policies.empty()) o.policies = policies;
  if (args.Has("--seed")) {
    std::string s = args.Get("--seed");
    char* end = nullptr;
    o.seed = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0') {
      std::fprintf(stderr, "tailcut sim: --seed wants a non-negative integer, got '%s'\n", s.c_str());
      return kExitUsage;
    }
    o.has_seed = true;
  }
  o.json = args.Has("--json");
  o.csv = args.Get("--csv");
  o.plot = args.Get("--plot");
  o.live_model = args.Has("--live-model");
  o.no_online = args.Has("--no-online");
  o.overrides = args.GetAll("--set");
  o.speed_shares = args.Has("--speed-shares");
  return sim::RunSimCommand(o);
}

}  // namespace tailcut::cli
