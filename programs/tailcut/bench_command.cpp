// `tailcut bench`: the command line; the harness is tailcut_live
// (programs/tailcut/live.h).
#include <cstdlib>

#include "commands.h"
#include "live.h"

namespace tailcut::cli {

std::vector<Flag> CompareFlags();  // sim_command.cpp

namespace {

int RunBench(const Args& args) {
  sim::BenchCommandOptions bo;
  sim::SimCommandOptions& o = bo.common;
  o.scenario = args.positional()[0];
  std::string policies;
  for (const std::string& p : args.GetAll("--policy")) policies += (policies.empty() ? "" : ",") + p;
  if (!policies.empty()) o.policies = policies;
  if (args.Has("--seed")) {
    o.seed = static_cast<uint64_t>(args.Int("--seed", 0, 0, INT64_MAX));
    o.has_seed = true;
  }
  bo.jobs = static_cast<uint32_t>(args.Int("--jobs", 0, 1, 1000000));
  bo.rounds = static_cast<uint32_t>(args.Int("--rounds", 1, 1, 1000));
  if (!args.error().empty()) {
    std::fprintf(stderr, "tailcut bench: %s\n", args.error().c_str());
    return kExitUsage;
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

}  // namespace

Command BenchCommand() {
  Command c;
  c.name = "bench";
  c.summary = "run a scenario's [live] section per policy on real local daemons; same table/JSON as sim";
  c.description =
      "Runs the scenario's [live] section on real daemons over loopback, once per policy entry: an in-process "
      "scheduler with that policy chain, live.executors tailcut-executor processes (fault flags from [live]: "
      "fail-slow, random delays, a crash), and live.jobs fan-out jobs submitted as [live] says (Poisson or closed "
      "loop). Prints the same table / JSON / CSV / plot as `tailcut sim` (try `tailcut sim SCENARIO --live-model` "
      "for the simulated twin). Progress goes to stderr. Each policy takes a few seconds.";
  c.footer =
      "Latency is measured by the client: submit call -> final job status (watch). After the table: each p50 and "
      "p99 with its 95% bootstrap interval, and each entry's p50 and p99 over none's with theirs; \"better than "
      "none\" is said only where the whole interval is below 1. Extra work = (machine time of all attempts - of "
      "committed attempts) / committed, from the core's attempt records; XMACH_% (extra_machine) is machine time "
      "relative to the `none` entry of the same run. The last row, (bound), is a clairvoyant list schedule of the "
      "[live] model with the same arrivals and no stragglers, each quantile at most the measured none's; P50/B, "
      "P99/B are multiples of it. (online), with a `none` entry: the [live] model's best single detection threshold "
      "(the simulator's sweep), or the measured none where that is lower at p99. See docs/benchmarks/live.md.\n"
      "exit codes: as tailcut sim's";
  c.flags = CompareFlags();
  c.flags.insert(
      c.flags.end(),
      {{"--jobs", "N", "override live.jobs (quick runs; 1000 or more for a p99), per policy over all rounds"},
       {"--rounds", "R",
        "run each entry R times, the entries interleaved round by round (seed + round, the same for "
        "every entry), jobs / R per round; the results merge (default 1)"},
       {"--executor", "PATH", "the executor binary (default: tailcut-executor next to tailcut)"},
       {"--trace", "FILE",
        "write each run's attempt trace (committed attempts, the CSV of docs/TRACE_FORMAT.md) for "
        "`tailcut whatif`; with several policy entries FILE.csv becomes FILE.ENTRY.csv per entry"}});
  c.positionals = {{"SCENARIO.toml", "the scenario, with a [live] section (docs/benchmarks/live.md)"}};
  c.run = RunBench;
  return c;
}

}  // namespace tailcut::cli
