// The regret table (issue 39, docs/benchmarks/matrix.md "The regret table"): on
// every shape (the 64 matrix shapes, the shipped scenarios and the
// task-scale shapes), `default` against `none` and against the best fixed
// shipped policy a user could have picked for that shape, at p50, p99 and
// p99.9, with extra work.
//
//   for (const RegretShape& s : RegretShapes(source_dir)) { auto row = RunRegretShape(s); ... }
//
// Deterministic (the simulator), so tests/sim/regret_test.cpp asserts the
// targets and scripts/regret-table.sh prints the table.
#pragma once

#include <string>
#include <vector>

#include "tailcut/common/status.h"
#include "tailcut/sim/scenario.h"
#include "tailcut/sim/simulator.h"

namespace tailcut::sim {

struct RegretShape {
  std::string name;     // m07, or the scenario file's stem
  std::string summary;  // one line
  Scenario scenario;
  bool matrix = false;  // one of MatrixShapes()
};

// The matrix shapes, then every configs/scenarios/*.toml under
// `source_dir` but datacenter.toml (a million tasks on 10,000 executors: a
// scale benchmark, ~minutes per policy), in name order.
StatusOr<std::vector<RegretShape>> RegretShapes(const std::string& source_dir);

// The fixed policies `default` is read against (`none` included): the
// inner chain and every shipped single policy that cuts tails.
const std::vector<std::string>& RegretFixedPolicies();

// The targets (issue 39).
inline constexpr double kRegretP50Slack = 1.02;  // default p50 <= this x none's
inline constexpr double kRegretBestNear = 1.1;   // default p99 <= this x the best's, on most shapes
inline constexpr double kRegretBestFar = 1.3;    // ... and this on the rest

struct RegretRow {
  const RegretShape* shape = nullptr;
  SimResult none, policy;  // `policy`: the entry judged (default)
  // Per quantile, the lowest of the fixed policies' (none included) and
  // which one; best_extra is the extra work of the p99 winner.
  double best_p50 = 0, best_p99 = 0, best_p999 = 0, best_extra = 0;
  std::string best_name;  // the p99 winner
  // Fixed policies refused on this shape (single-tenant ones with [owners]).
  std::vector<std::string> refused;
};

// Runs `entry` and every fixed policy on one shape.
StatusOr<RegretRow> RunRegretShape(const RegretShape& shape, const std::string& entry = "default",
                                   const std::vector<std::string>& fixed = RegretFixedPolicies());

// The markdown table: one line per row, then the counts of shapes holding
// each target, for the matrix and for the other shapes.
std::string RegretTable(const std::vector<RegretRow>& rows, const std::string& entry = "default");

}  // namespace tailcut::sim
