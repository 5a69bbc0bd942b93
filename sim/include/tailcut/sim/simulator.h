// The discrete-event driver: the SchedulerCore on virtual time (FakeClock)
// and modelled executors, network, faults and workload; with
// `[cluster.edges]`, two tiers (a top core over edges, each edge a core over
// its devices; docs/EDGE.md "Two tiers"), in the same loop.
//
//   Simulator sim(scenario, std::move(chain), seed);
//   SimResult r = sim.Run();
//
// Not thread-safe; separate Simulators may run on separate threads.
//
// Events are processed in (time, insertion order); every random draw comes
// from the seed, so a run is a pure function of (scenario, policies, seed).
// Attempts are streamed into aggregates; only per-job latencies are kept.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tailcut/core/scheduler_core.h"
#include "tailcut/sim/scenario.h"

namespace tailcut::sim {

// One owner's jobs, when the workload has several owners ([[workload.stream]]).
struct OwnerResult {
  std::string owner;
  uint64_t jobs = 0;                  // finished
  double p50 = 0, p99 = 0;            // job latency, s
  double wait_p50 = 0, wait_p99 = 0;  // queue wait of its tasks: first launch - submit, s
  std::vector<double> latencies, waits;
};

struct SimResult {
  std::string policy;
  uint64_t jobs = 0;             // jobs that ended (any state)
  uint64_t failed = 0;           // ... of which failed or were cancelled
  uint64_t unfinished = 0;       // submitted but still running at the stop
  uint64_t tasks = 0;            // tasks submitted
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, p999 = 0;  // job latency, s
  double machine_s = 0;          // executor time of all attempts
  double committed_s = 0;        // executor time of committed attempts
  double extra_work = 0;         // (machine_s - committed_s) / committed_s
  uint64_t attempts = 0;         // attempts launched
  uint64_t copies = 0;           // ... of which redundant copies
  double virtual_s = 0;          // virtual time at the end
  uint64_t events = 0;           // events processed
  double wall_s = 0;             // wall time of Run()
  uint64_t committed = 0;        // attempts committed (one per finished task)
  uint64_t failed_attempts = 0;  // attempts reported failed (AttemptFailed)
  uint64_t dropped = 0;          // attempts reported dropped (AttemptDropped)
  uint64_t progress = 0;         // progress reports sent (AttemptProgress)
  // A digest of every attempt's (job, task, executor, launch time, copy):
  // equal digests, the same schedule (tests/sim/tick_test.cpp).
  uint64_t placements = 0;
  std::string last_failure;      // reason of the last job that failed
  // Filled by ComparePolicies (NaN when it has no reference): machine_s
  // relative to the `none` entry of the same comparison, and the
  // clairvoyant bound's job-latency quantiles (tailcut/sim/clairvoyant.h).
  double extra_machine = std::numeric_limits<double>::quiet_NaN();
  double bound_p50 = std::numeric_limits<double>::quiet_NaN();
  double bound_p99 = std::numeric_limits<double>::quiet_NaN();
  // The online reference's row only: its threshold as a multiple of the
  // class median (0 = never acting was best); NaN for every other row.
  double online_ratio = std::numeric_limits<double>::quiet_NaN();
  // Per job, indexed by core job id - 1 (= submission order); NaN for a
  // job still unfinished at the stop. 8 bytes per job, nothing per attempt.
  std::vector<double> latencies;
  // Per owner, in the order owners first submit (only with streams).
  std::vector<OwnerResult> owners;
};

// Fills mean/p50/.../p999 from r->latencies (finished jobs); quantiles are
// nearest-rank (tailcut/common/stats.h).
void Summarise(SimResult* r);

namespace loop {
class Loop;
}

class Simulator {
 public:
  Simulator(const Scenario& scenario, PolicyChain policies, uint64_t seed);
  // Two tiers: `edge_chains` has one chain per edge (missing ones: none).
  Simulator(const Scenario& scenario, PolicyChain policies, std::vector<PolicyChain> edge_chains, uint64_t seed);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  SimResult Run();

 private:
  loop::Loop* impl_;
};

// Builds the chain for one --policy entry ("clone+spark": a chain of two)
// and runs the scenario with it.
StatusOr<SimResult> RunPolicy(const Scenario& scenario, const std::string& entry, uint64_t seed);

}  // namespace tailcut::sim
