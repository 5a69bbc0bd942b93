// `tailcut sim`: run one scenario once per policy and compare side by side.
// The command line (flags, --help) is the program's: programs/tailcut/sim_command.cpp.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "tailcut/common/status.h"
#include "tailcut/sim/compare.h"
#include "tailcut/sim/scenario.h"
#include "tailcut/sim/simulator.h"

namespace tailcut::sim {

struct SimCommandOptions : CompareOptions {
  std::string scenario;          // SCENARIO.toml
  bool has_seed = false;         // --seed given (else the scenario's seed)
  uint64_t seed = 0;
  bool live_model = false;             // --live-model: simulate the [live] section
  std::vector<std::string> overrides;  // --set KEY=VALUE: scenario keys changed before loading
  bool speed_shares = false;           // --speed-shares: every workload class divisible
};

// Runs the command; returns the process exit code (0 ok, 1 a run failed,
// 2 bad usage or scenario). Wall time and peak RSS go to stderr.
int RunSimCommand(const SimCommandOptions& options);

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
