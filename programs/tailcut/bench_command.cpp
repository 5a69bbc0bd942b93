// `tailcut bench`: argument conversion only; the harness lives in sim/
// (library tailcut_live, programs/tailcut/live.h).
#include <cstdlib>

#include "commands.h"
#include "live.h"

namespace tailcut::cli {

int RunBench(const Args& args) {
  sim::BenchCommandOptions bo;
  sim::SimCommandOptions& o = bo.common;
  o.help = args.Has("--help") || args.Has("-h");
  if (args.positional().size() > 1) {
    std::fprintf(stderr, "tailcut bench: one scenario file, please (got %zu)\n", args.positional().size());
    return kExitUsage;
  }
  if (!args.positional().empty()) o.scenario = args.positional()[0];
  std::string policies;
  for (const std::string& p : args.GetAll("--policy")) policies += (policies.empty() ? "" : ",") + p;
  if (!policies.empty()) o.policies = policies;
  auto number = [&](const char* flag, uint64_t* out) {
    std::string s = args.Get(flag);
    char* end = nullptr;
    *out = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || s[0] == '-') {
      std::fprintf(stderr, "tailcut bench: %s wants a non-negative integer, got '%s'\n", flag, s.c_str());
      return false;
    }
    return true;
  };
  if (args.Has("--seed")) {
    if (!number("--seed", &o.seed)) return kExitUsage;
    o.has_seed = true;
  }
  if (args.Has("--jobs")) {
    uint64_t n = 0;
    if (!number("--jobs", &n) || n == 0 || n > 1000000) return kExitUsage;
    bo.jobs = static_cast<uint32_t>(n);
  }
  if (args.Has("--rounds")) {
    uint64_t n = 0;
    if (!number("--rounds", &n) || n == 0 || n > 1000) return kExitUsage;
    bo.rounds = static_cast<uint32_t>(n);
  }
  o.json = args.Has("--json");
  o.no_online = args.Has("--no-online");
  o.csv = args.Get("--csv");
  o.plot = args.Get("--plot");
  bo.executor = args.Get("--executor");
  bo.trace = args.Get("--trace");
  if (args.Has("--trace") && bo.trace.empty()) {
    std::fprintf(stderr, "tailcut bench: --trace wants a file name\n");
    return kExitUsage;
  }
  return sim::RunBenchCommand(bo);
}

}  // namespace tailcut::cli
