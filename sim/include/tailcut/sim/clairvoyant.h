// The clairvoyant bound printed by `tailcut sim` and `tailcut bench` next to
// every policy (docs/benchmarks/tail.md, "The clairvoyant bound").
//
// A list-scheduling replay of the scenario's workload, with the same seed,
// hence the same jobs, arrival times, task sizes and executor speeds as
// every simulated policy, by a scheduler that knows what the policies must
// guess: which attempts would straggle, each executor's speed, when it turns
// fail-slow and when it crashes. Every task runs once, for its first
// attempt's drawn time without the straggler factor (no failures, no
// drops), in the core's placement order (runnable jobs round-robin, 64
// tasks per visit), on the free slot where it finishes first; a task waits
// for a busy slot instead when that one would finish it earlier. Slots are
// busy only while a task runs (launches are pipelined); each task pays the
// network's least one-way delay out and back. What it bounds, and where
// copies beat it, is in docs/benchmarks/tail.md.
#pragma once

#include <cstdint>
#include <vector>

#include "tailcut/sim/scenario.h"
#include "tailcut/sim/simulator.h"

namespace tailcut::sim {

struct BoundOptions {
  uint64_t seed = 1;
  // Submit times to use instead of the scenario's arrival process (the live
  // bench passes the times its submitter used); one job each.
  const std::vector<double>* arrivals = nullptr;
};

// Per-job latencies and quantiles as SimResult (policy "bound"); machine_s
// is the slot time the replay used, attempts = tasks run; events counts
// the replay's events.
SimResult ClairvoyantBound(const Scenario& scenario, const BoundOptions& options);

}  // namespace tailcut::sim
