// `tailcut bench`: a scenario's [live] section on REAL daemons over loopback.
//
// Per policy entry: an in-process SchedulerServer (tcp://127.0.0.1:*) with
// that chain and the scenario's [core] options, `live.executors`
// tailcut-executor child processes with fault flags derived from [live]
// (fail-slow, random delays, crash), and a client workload (Poisson or
// closed loop). Results come back as SimResult, so the table, JSON, CSV and
// CDF plot are exactly `tailcut sim`'s (docs/benchmarks/live.md, "Live").
//
// Library `tailcut_live` (sim/): it needs the ZeroMQ server and the client
// library, which the simulator proper (`tailcut_sim`) must not depend on.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tailcut/common/status.h"
#include "tailcut/sim/command.h"
#include "tailcut/sim/scenario.h"
#include "tailcut/sim/simulator.h"

namespace tailcut::sim {

extern const char kBenchUsage[];

struct LiveOptions {
  std::string executor_path;  // tailcut-executor; empty: next to this binary
  uint64_t seed = 1;          // arrivals and the executors' fault seeds
  uint32_t jobs = 0;          // > 0: overrides live.jobs
  bool progress = true;       // progress lines on stderr
  double job_timeout_s = 60;  // a job not done by then counts as unfinished
  std::string trace_path;     // non-empty: write the run's attempt trace here
                              // (committed attempts, docs/TRACE_FORMAT.md)
};

// Runs scenario.live once with the chain named by `entry` ("clone+spark",
// "none", "default"). Fields of SimResult: latencies and quantiles are
// client-side (submit call to final status); machine_s / committed_s /
// extra_work / attempts / copies come from the core's attempt records
// (CoreObserver on the server; see docs/benchmarks/tail.md for the definition);
// virtual_s is the workload's wall time, events 0.
StatusOr<SimResult> RunLivePolicy(const Scenario& scenario, const std::string& entry, const LiveOptions& options);

// The clairvoyant bound of a bench run (tailcut/sim/clairvoyant.h) on the
// [live] model (LiveAsSimScenario): the run's Poisson submit times (closed:
// its own loop), task times drawn from the kernel's law with the run's seed,
// random delays removed, the fail-slow executor's factor known, a crashed
// executor that the harness restarts treated as never gone.
SimResult LiveBound(const Scenario& scenario, const LiveOptions& options);

// `round`, another run of the same policy entry, added to `into` (jobs,
// latencies, machine time, counts; quantiles recomputed).
void MergeRound(SimResult* into, const SimResult& round);
// Each result's p50 and p99 with a bootstrap interval (tailcut/common/
// stats.h), and each one's p50 / p99 over `none`'s with theirs; "better
// than none" only where the whole interval is below 1.
void PrintIntervals(std::FILE* out, const std::vector<SimResult>& results, uint32_t rounds);

struct BenchCommandOptions {
  SimCommandOptions common;  // scenario, --policy, --seed, --json, --csv, --plot, --help
  std::string executor;      // --executor PATH
  uint32_t jobs = 0;         // --jobs N (0: live.jobs): per policy, over all rounds
  // --rounds R: each policy entry runs R times, the entries interleaved
  // round by round (none, default, none, default, ...), each round with
  // jobs / R jobs and its own seed (seed + round, the same for every
  // entry), so a drift of the machine's load falls on every policy alike.
  uint32_t rounds = 1;
  std::string trace;         // --trace FILE: each run's attempt trace (for
                             // `tailcut whatif`); with several policy entries
                             // FILE gets ".ENTRY" before its extension
};
// The trace file of one entry: `path` itself when it is the only entry,
// else "run.csv" -> "run.ENTRY.csv" ('+' in ENTRY kept).
std::string BenchTracePath(const std::string& path, const std::string& entry, bool several);
// The whole command; exit codes as `tailcut sim`'s.
int RunBenchCommand(const BenchCommandOptions& options);

}  // namespace tailcut::sim
