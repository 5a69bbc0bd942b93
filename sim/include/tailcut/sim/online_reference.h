// The online reference (docs/benchmarks/tail.md, "The online reference"): the
// best a scheduler can do that knows each class's run-time distribution but
// not which attempt straggles. One rule with one parameter, swept: every
// attempt still running at `ratio` x its class's median run time (without
// the straggler mixture) gets one copy when a slot and the redundancy
// budget allow, else is killed and restarted (the core relaunches it at
// once); at most 16 times per task (a task long on every try would loop).
// The reference is the run with the lowest p99 over the sweep and
// over never acting (`none`), so it is never above `none`.
#pragma once

#include <cstdint>
#include <vector>

#include "tailcut/common/status.h"
#include "tailcut/sim/scenario.h"
#include "tailcut/sim/simulator.h"

namespace tailcut::sim {

// The ratios swept, ascending.
const std::vector<double>& OnlineReferenceRatios();

struct OnlineReferenceResult {
  SimResult result;  // policy "online"
  double ratio = 0;  // the best ratio; 0 = never acting (none was best)
};

// `none`: the scenario's `none` run for `seed` (a candidate of the sweep).
// Refused for trace workloads and two tiers (no class distribution to know).
StatusOr<OnlineReferenceResult> OnlineReference(const Scenario& scenario, uint64_t seed, const SimResult& none);

}  // namespace tailcut::sim
