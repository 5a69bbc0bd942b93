// `tailcut sim`: run one scenario once per policy and compare side by side.
// The CLI hook (programs/tailcut/sim_command.cpp) only converts its arguments.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "tailcut/common/status.h"
#include "tailcut/sim/scenario.h"
#include "tailcut/sim/simulator.h"

namespace tailcut::sim {

extern const char kSimUsage[];

struct SimCommandOptions {
  std::string scenario;          // SCENARIO.toml
  std::string policies;          // --policy: comma-separated runs; '+' chains;
                                 // empty: the scenario's policies.chain, else none
  bool has_seed = false;         // --seed given (else the scenario's seed)
  uint64_t seed = 0;
  bool json = false;             // --json
  std::string csv;               // --csv FILE: policy,job,latency_s
  std::string plot;              // --plot FILE.svg: latency CDF per policy
  bool live_model = false;       // --live-model: simulate the [live] section
  bool no_online = false;        // --no-online: skip the online reference's sweep
  std::vector<std::string> overrides;  // --set KEY=VALUE: scenario keys changed before loading
  bool speed_shares = false;     // --speed-shares: every workload class divisible
  bool help = false;
};

// Runs the command; returns the process exit code (0 ok, 1 a run failed,
// 2 bad usage or scenario). Wall time and peak RSS go to stderr.
int RunSimCommand(const SimCommandOptions& options);

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
int ComparePolicies(const SimCommandOptions& options, const Scenario& scenario, const char* tool,
                    const std::string& title,
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

// Output formats. `refs`: the reference rows (bound, online), printed last
// as "(policy)".
void PrintTable(std::FILE* out, const std::vector<SimResult>& results, const std::vector<SimResult>& refs = {});
std::string ResultsJson(const std::vector<SimResult>& results);
Status WriteLatencyCsv(const std::string& path, const std::vector<SimResult>& results);
// Job-latency CDF, one line per policy, log-x axis; hand-written SVG.
std::string CdfSvg(const std::vector<SimResult>& results, const std::string& title);
Status WriteFile(const std::string& path, const std::string& text);

// JSON pieces shared by the reports: a number (null when not finite) and a
// quoted, escaped string.
std::string Num(double v);
std::string JsonString(const std::string& s);

// Peak resident set size of this process in bytes (getrusage).
uint64_t PeakRssBytes();

}  // namespace tailcut::sim
