// `tailcut whatif`: the command line; the analysis lives in sim/
// (sim/include/tailcut/sim/whatif.h, docs/WHATIF.md).
#include <cstdint>
#include <cstdio>

#include "commands.h"
#include "tailcut/sim/whatif.h"

namespace tailcut::cli {
namespace {

int RunWhatif(const Args& args) {
  sim::WhatifCommandOptions o;
  o.trace = args.positional()[0];
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

}  // namespace

Command WhatifCommand() {
  Command c;
  c.name = "whatif";
  c.summary = "what-if straggler analysis of an attempt trace: the JCT slowdown stragglers caused";
  c.description =
      "What-if straggler analysis of a recorded attempt trace (docs/TRACE_FORMAT.md: the scheduler's [scheduler] "
      "trace_path, `tailcut bench --trace`, trace-gen). Replays the trace in the simulator (the real scheduler "
      "core, policy none) as recorded and with every attempt at its task class's typical time (the class median, "
      "scaled by input_size when the trace has it), and reports the slowdown of job completion time (JCT) the "
      "stragglers caused. Then splits it: per executor and per task class, the JCT saved by a replay in which only "
      "that executor's (class's) attempts run at their typical time. Finally replays the trace with --policy ENTRY "
      "and with none, the slowness bound to the executors it was seen on, to show what that chain would have saved.";
  c.footer = "exit codes: 0 ok, 1 a replay failed, 2 bad usage, trace or scenario. See docs/WHATIF.md.";
  c.flags = {
      {"--scenario", "FILE.toml",
       "take [core], [predictor], [policies.*] and cluster.network of the replays from this scenario (default: "
       "every key at its default); executors, slots and jobs come from the trace"},
      {"--policy", "ENTRY", "the chain compared with none (default: default); none skips"},
      {"--seed", "N", "seed of the replays (default 1)"},
      {"--top", "N", "executors and classes listed (default 10, 0 = all)"},
      {"--json", "", "one JSON object instead of the tables"},
  };
  c.positionals = {{"TRACE.csv", "the attempt trace"}};
  c.run = RunWhatif;
  return c;
}

}  // namespace tailcut::cli
