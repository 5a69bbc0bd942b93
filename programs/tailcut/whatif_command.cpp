// `tailcut whatif`: argument conversion only; the analysis lives in sim/
// (sim/include/tailcut/sim/whatif.h, docs/WHATIF.md).
#include <cstdint>
#include <cstdio>

#include "commands.h"
#include "tailcut/sim/whatif.h"

namespace tailcut::cli {

int RunWhatif(const Args& args) {
  sim::WhatifCommandOptions o;
  o.help = args.Has("--help") || args.Has("-h");
  if (args.positional().size() > 1) {
    std::fprintf(stderr, "tailcut whatif: one trace file, please (got %zu)\n", args.positional().size());
    return kExitUsage;
  }
  if (!args.positional().empty()) o.trace = args.positional()[0];
  // Args::Int: a value that is not a whole number in range is a usage
  // error naming the flag.
  if (args.Has("--seed")) {
    o.seed = static_cast<uint64_t>(args.Int("--seed", 1, 0, INT64_MAX));
    o.has_seed = true;
  }
  o.top = static_cast<size_t>(args.Int("--top", 10, 0, 1000000));
  if (!args.error().empty()) {
    std::fprintf(stderr, "tailcut whatif: %s\n", args.error().c_str());
    return kExitUsage;
  }
  if (args.Has("--policy")) {
    o.policy = args.Get("--policy");
    if (o.policy.empty()) {
      std::fprintf(stderr, "tailcut whatif: --policy wants an entry (none skips the policy replay)\n");
      return kExitUsage;
    }
  }
  o.scenario = args.Get("--scenario");
  o.json = args.Has("--json");
  return sim::RunWhatifCommand(o);
}

}  // namespace tailcut::cli
