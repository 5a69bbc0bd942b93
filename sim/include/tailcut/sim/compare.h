// The policy comparison of `tailcut sim` (the simulator) and `tailcut bench`
// (real daemons, programs/tailcut/live.h): run a scenario once per policy
// entry, add the reference rows (clairvoyant bound, online threshold), and
// print or write the results. The flags that fill CompareOptions are the
// programs' (programs/tailcut/sim_command.cpp, bench_command.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tailcut/common/status.h"
#include "tailcut/sim/scenario.h"
#include "tailcut/sim/simulator.h"

namespace tailcut::sim {

// What ComparePolicies runs and writes (shared by `tailcut sim` and
// `tailcut bench`; the flags are the programs', programs/tailcut).
struct CompareOptions {
  std::string policies;    // --policy: comma-separated runs; '+' chains;
                           // empty: the scenario's policies.chain, else none
  bool json = false;       // --json
  std::string csv;         // --csv FILE: policy,job,latency_s
  std::string plot;        // --plot FILE.svg: latency CDF per policy
  bool no_online = false;  // --no-online: skip the online reference's sweep
};

// The policy comparison shared by `tailcut sim` and `tailcut bench`: splits
// options.policies (empty: scenario.chain) into entries (commas; '+' inside an entry chains), runs
// each through `run` (which may print its own progress line), then prints the
// table (after `title`) or --json, and writes --csv / --plot. Returns the exit
// code: 2 for no entries or an invalid-argument error from `run`, 1 for any
// other error, an unwritable output file or a run with unfinished jobs.
// After the runs it fills each result's extra_machine (against the `none`
// entry, if there is one) and, when `bound` is given, its bound_p50/p99 from
// the bound's result, which the table prints as a row and the plot as a line.
// With a `none` entry, each of the bound's quantiles is at most none's (a
// clairvoyant scheduler can do what none did), and `online`, when given, is
// called with none's result for the online reference's row (a second
// reference row, after the bound's; skipped without a `none` entry).
using RunEntryFn = std::function<StatusOr<SimResult>(const std::string& entry)>;
using BoundFn = std::function<SimResult()>;
using OnlineFn = std::function<StatusOr<SimResult>(const SimResult& none)>;
int ComparePolicies(const CompareOptions& options, const Scenario& scenario, const char* tool, const std::string& title,
                    const std::string& plot_title, const RunEntryFn& run, const BoundFn& bound = {},
                    const OnlineFn& online = {});

// The online reference's row (tailcut/sim/online_reference.h) for `scenario`,
// with online_ratio set; its progress line goes to stderr after `tool`.
StatusOr<SimResult> OnlineRow(const Scenario& scenario, uint64_t seed, const SimResult& none, const char* tool);

// extra_machine of each result: (machine_s - machine_s of `none`) /
// machine_s of `none`; NaN for all when no entry is `none`.
void FillExtraMachine(std::vector<SimResult>* results);
// Each of the bound's quantiles (and mean) at most none's: none's schedule is
// one a clairvoyant scheduler could follow.
void CapAtNone(SimResult* bound, const SimResult& none);
// bound_p50 / bound_p99 of each result from the bound's quantiles.
void FillBound(std::vector<SimResult>* results, const SimResult& bound);

}  // namespace tailcut::sim
