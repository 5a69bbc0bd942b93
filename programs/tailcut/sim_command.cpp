// `tailcut sim`: the command line; the simulator lives in sim/.
#include <cstdlib>

#include "commands.h"
#include "tailcut/sim/command.h"

namespace tailcut::cli {
namespace {

int RunSim(const Args& args) {
  sim::SimCommandOptions o;
  o.scenario = args.positional()[0];
  // Repeated --policy flags add up: --policy none --policy spark.
  std::string policies;
  for (const std::string& p : args.GetAll("--policy")) policies += (policies.empty() ? "" : ",") + p;
  if (!policies.empty()) o.policies = policies;
  if (args.Has("--seed")) {
    std::string s = args.Get("--seed");
    char* end = nullptr;
    o.seed = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || s[0] == '-') {
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

}  // namespace

// The flags `tailcut sim` and `tailcut bench` share.
std::vector<Flag> CompareFlags() {
  return {
      {"--policy", "LIST",
       "comma-separated entries, one run each (default: the scenario's policies.chain as one entry, else none). "
       "Inside an entry '+' chains policies in one run: --policy none,spark,clone+spark,default. Names: none, "
       "default, and the built-in policies (parameters from the scenario's [policies.NAME] tables). Repeatable: "
       "the lists add up",
       "", true},
      {"--seed", "N", "RNG seed: arrivals and fault draws (default: the scenario's seed, else 1)"},
      {"--json", "",
       "print a JSON array: policy, jobs, mean, p50, p90, p99, p999 (seconds), extra_work, extra_machine "
       "(fractions), copies, bound_p50, bound_p99, p50_x_bound, p99_x_bound, and more; the last element is the "
       "bound (\"policy\": \"bound\")"},
      {"--csv", "FILE", "per-job latencies: policy,job,latency_s"},
      {"--plot", "FILE.svg", "SVG of the job-latency CDF per policy (log-x)"},
      {"--no-online", "",
       "skip the online reference (its sweep runs the scenario once per threshold ratio: 8 more runs)"},
  };
}

Command SimCommand() {
  Command c;
  c.name = "sim";
  c.summary = "simulate a scenario per policy (virtual time)";
  c.description =
      "Simulates the scenario on virtual time with the real scheduler core, once per policy entry, on the same "
      "seeded workload, and compares them side by side.";
  c.footer =
      "Latency is submit -> job finished. Extra work is (machine time of all attempts - machine time of committed "
      "attempts) / committed machine time. XMACH_% (extra_machine) is machine time relative to the `none` entry of "
      "the same run. The row (bound) is a clairvoyant list schedule of the same jobs without stragglers, each "
      "quantile at most none's; P50/B and P99/B are each policy's p50 and p99 as multiples of it. With a `none` "
      "entry the last row, (online), is the best single detection threshold a scheduler that knows the run-time "
      "distribution can use (copy or restart every attempt still running at R x its class median, R swept; "
      "docs/benchmarks/tail.md). Wall time and peak RSS are printed to stderr. See docs/SIMULATOR.md.\n"
      "exit codes: 0 ok, 1 a run failed, 2 bad usage or scenario";
  c.flags = CompareFlags();
  c.flags.insert(c.flags.end(),
                 {{"--live-model", "",
                   "simulate the scenario's [live] section (what `tailcut bench` runs on real daemons) instead of "
                   "its main sections"},
                  {"--set", "KEY=VALUE",
                   "change a scenario key (a TOML value) before loading, e.g. --set cluster.edges.edge_quorum=0.8; "
                   "repeatable",
                   "", true},
                  {"--speed-shares", "",
                   "make every workload class divisible: the scheduler sizes each task's share of the job's work by "
                   "its executor's measured speed (docs/JOBS.md; classes need rule = all)"}});
  c.positionals = {{"SCENARIO.toml", "the scenario (docs/SIMULATOR.md)"}};
  c.run = RunSim;
  return c;
}

}  // namespace tailcut::cli
