// The do-no-harm matrix (issue 31, docs/benchmarks/matrix.md "The do-no-harm
// matrix"): 64 seeded shapes spanning what users run (task times 1 ms to
// 10 s; lognormal, Pareto, bimodal; 1 to 8 slots per executor; stragglers
// 0-20%; fail-slow executors 0-10%; offered load 30-100% or closed; one
// owner or two; coded and quorum jobs), each run in the simulator under
// `none`, `default` and the online reference, with the `none` p99 of its
// healthy twin (the same shape without stragglers or fail-slow executors).
//
//   for (const MatrixShape& s : MatrixShapes()) { auto row = RunMatrixShape(s); ... }
//
// Deterministic: the same shapes and figures on every machine, so
// tests/sim/matrix_test.cpp asserts the criteria and
// scripts/matrix-table.sh prints the table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tailcut/common/status.h"
#include "tailcut/sim/scenario.h"
#include "tailcut/sim/simulator.h"

namespace tailcut::sim {

struct MatrixShape {
  std::string name;     // m07, ...
  std::string summary;  // what the shape is, one line
  std::string toml;     // the scenario, as `tailcut sim` reads it
  std::string healthy;  // its healthy twin: no stragglers, no fail-slow executors
  bool faulty = false;  // stragglers or fail-slow executors
  bool plain = true;    // rule all (not coded, not quorum)
};

// The shapes, in order; the same on every call.
const std::vector<MatrixShape>& MatrixShapes();

// The criteria the matrix holds the default chain to (issue 31).
inline constexpr double kMatrixP50Slack = 1.02;     // default p50 <= this x none's, every shape
inline constexpr double kMatrixOnlineSlack = 1.15;  // faulty shapes: default p99 <= this x online's
inline constexpr double kMatrixHealthySlack = 1.4;  // faulty shapes: default p99 <= this x the healthy p99

struct MatrixRow {
  const MatrixShape* shape = nullptr;
  SimResult none, policy;                            // `policy`: the entry judged (default)
  SimResult online;                                  // the online reference (tailcut/sim/online_reference.h)
  double online_ratio = 0;                           // its threshold, x the class median; 0 = none was best
  double healthy_p99 = 0;                            // none's p99 on the healthy twin
  bool p50_holds = false, p99_holds = false;         // every shape
  bool online_holds = false, healthy_holds = false;  // faulty shapes (true on the others)
};

// Runs one shape: `none`, `entry` (a --policy entry), the online reference
// and the healthy twin (`references` false skips the last two: 9 runs fewer).
StatusOr<MatrixRow> RunMatrixShape(const MatrixShape& shape, const std::string& entry = "default",
                                   bool references = true);

// The markdown table of docs/benchmarks/matrix.md: one line per row, then the
// count of shapes holding each criterion.
std::string MatrixTable(const std::vector<MatrixRow>& rows, const std::string& entry = "default");

}  // namespace tailcut::sim
