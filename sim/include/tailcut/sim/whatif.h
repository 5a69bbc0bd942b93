// `tailcut whatif`: what-if straggler analysis of a recorded attempt trace
// (docs/WHATIF.md). The trace is replayed in the simulator (the real core on
// virtual time) as recorded and with attempts set to their task class's
// typical time; the difference in job completion time is the slowdown the
// stragglers caused, attributed to executors and task classes by replaying
// with only that executor's / class's attempts normalised. A second pair of
// replays asks what the default policy chain would have saved.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tailcut/common/status.h"
#include "tailcut/predictors/trace.h"
#include "tailcut/sim/scenario.h"

namespace tailcut::sim {

// Job completion time (JCT) figures of one replay, seconds.
struct JctFigures {
  uint64_t jobs = 0;       // jobs that finished
  uint64_t unfinished = 0;
  double mean = 0, p50 = 0, p99 = 0;
  double total = 0;        // sum of JCTs (job-seconds)
  double makespan = 0;     // first submit -> last job done
};

// One executor or task class: its attempts normalised, the rest as recorded.
struct WhatifPart {
  std::string name;        // executor id (as in the trace) or class name
  std::string label;       // an executor's name from "# executor ID = NAME" lines; "" if none
  uint64_t attempts = 0;
  double recorded_s = 0;   // sum of its attempts' recorded run times
  double typical_s = 0;    // ... and of their typical times
  JctFigures normalised;   // the replay with only its attempts at typical time
  double saved_total = 0;  // recorded.total - normalised.total (job-seconds)
  double saved_mean = 0;   // recorded.mean - normalised.mean (s per job)
  double saved_p99 = 0;    // recorded.p99 - normalised.p99
  double share = 0;        // saved_total / (recorded.total - ideal.total)
};

struct WhatifOptions {
  uint64_t seed = 1;                 // the replays' seed (network draws, policies)
  std::string policy = "default";    // the chain compared with `none`; empty: skip
  // Core, predictor, policy parameters and network of the replays (a
  // scenario file's); executors, slots, workload and faults come from the
  // trace. Null: a scenario with every key at its default.
  const Scenario* base = nullptr;
  size_t top = 0;                    // > 0: keep only the first `top` parts of each split
};

struct WhatifReport {
  std::string origin;
  uint64_t rows = 0, jobs = 0, tasks = 0;
  uint64_t duplicates = 0;           // rows of a (job, task) seen before: left out
  uint32_t executors = 0, slots = 0;
  bool size_scaled = false;          // some class's typical time scales with input_size
  JctFigures trace;                  // measured on the trace itself (max end - min start)
  JctFigures recorded, ideal;        // replays: as recorded, every attempt typical
  double slowdown = 0;               // recorded.mean / ideal.mean
  std::vector<WhatifPart> by_executor, by_class;  // most job-seconds saved first
  // Policy replays (executor-bound model, docs/WHATIF.md); empty policy: skipped.
  std::string policy;
  JctFigures policy_none, policy_chain;
  uint64_t policy_copies = 0;
  double fail_slow_windows = 0;      // executor windows modelled as slow
};

// The analysis on parsed rows (ParseTraceCsv / ReadTraceCsv). Errors:
// an empty trace, a replay that leaves jobs unfinished, a bad policy name.
StatusOr<WhatifReport> AnalyseTrace(const std::vector<TraceRow>& rows, const std::string& origin,
                                    const WhatifOptions& options);

// Typical run time of each row: the median of its task class, or when every
// row of the class has input_size > 0, the class's median seconds per unit
// of input times the row's input_size. Exposed for tests.
std::vector<double> TypicalTimes(const std::vector<TraceRow>& rows, bool* size_scaled = nullptr);

void PrintWhatif(std::FILE* out, const WhatifReport& report);
std::string WhatifJson(const WhatifReport& report);

struct WhatifCommandOptions {
  std::string trace;        // TRACE.csv
  std::string scenario;     // --scenario FILE: core / policies / network of the replays
  std::string policy = "default";  // --policy ENTRY (none: skip the policy replay)
  bool has_seed = false;
  uint64_t seed = 1;
  size_t top = 10;          // --top N (0 = all)
  bool json = false;
};
// Exit codes: 0 ok, 1 a replay failed, 2 bad usage, trace or scenario.
int RunWhatifCommand(const WhatifCommandOptions& options);

}  // namespace tailcut::sim
