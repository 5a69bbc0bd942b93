// A simulation scenario: cluster, faults, workload, core options. Loaded
// from TOML (configs/scenarios/*.toml); docs/SIMULATOR.md lists every key
// with its default.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tailcut/common/config.h"
#include "tailcut/common/status.h"
#include "tailcut/predictors/trace.h"
#include "tailcut/core/scheduler_core.h"
#include "tailcut/sim/random.h"

namespace tailcut::sim {

struct FailSlowFault {
  uint32_t executor = 0;     // executor index, 0-based
  double at_s = 0;           // onset (virtual seconds)
  double factor = 5;         // run-time multiplier while slow
  double duration_s = 0;     // 0 = for the rest of the run
};

struct CrashFault {
  uint32_t executor = 0;
  double at_s = 0;
  double detect_s = 1.0;     // until the core is told (RemoveExecutor lost=true)
};

// [cluster.edges]: two tiers (docs/EDGE.md, "Two tiers"). The parent core
// sees `count` edges, each one executor of executors_per_edge x slots
// slots; each edge runs its own core (same policies) over its devices.
struct EdgeTierModel {
  uint32_t count = 0;                                  // edges; 0 = one tier (the default)
  uint32_t executors_per_edge = 0;                     // devices per edge
  Distribution link = Distribution::Constant(0);       // one-way delay parent <-> edge per message (s)
  double edge_quorum = 0;                              // an edge closes its part of a parent job at this share; 0 = off
};

struct ClusterModel {
  uint32_t executors = 10;
  uint32_t slots = 1;                               // per executor
  uint64_t memory_mb = 0;                           // per executor (ExecutorDesc::memory_mb); 0 = does not say
  uint32_t gpus = 0;                                // per executor
  Distribution speed = Distribution::Constant(1);  // per-executor run-time multiplier, drawn once
  Distribution network = Distribution::Constant(0);  // one-way delay per message (s)
  std::vector<FailSlowFault> fail_slow;
  std::vector<CrashFault> crashes;
  // Progress reports per attempt, at done fractions 1/(n+1) .. n/(n+1) of
  // its run (AttemptProgress, as executors report kernel progress); 0 = none.
  uint32_t progress_reports = 4;
  // Probability that an executor drops an attempt partway on its own
  // (AttemptDropped: the core requeues it without counting a failure).
  double drop_prob = 0;
  EdgeTierModel edges;
};

struct JobClass {
  std::string name = "job";
  double weight = 1;
  Distribution tasks = Distribution::Constant(10);  // fan-out, rounded, >= 1
  Distribution task_time = Distribution::Exponential(1.0);
  CompletionKind rule = CompletionKind::kAll;
  uint32_t k = 0;           // k_of_n / quorum: commits that end the job
  double overselect = 0;    // quorum: n = ceil(k (1 + overselect)) when tasks unset
  uint32_t min_count = 0;   // quorum
  double deadline_s = 0;    // quorum
  double fail_prob = 0;     // an attempt fails partway (AttemptFailed) with this probability
  bool tasks_set = false;   // `tasks` given explicitly
  // Speed-proportional work (docs/JOBS.md): the job's work (tasks x
  // task_time draws) is divisible, and the scheduler sizes each task's
  // share by its executor's measured speed. Needs rule all.
  bool divisible = false;
  uint64_t memory_mb = 0;  // each task's memory request (TaskDef::memory_mb)
  uint32_t gpus = 0;       // each task's GPUs
};
// Units of work per task of a divisible class: fine enough that a share is
// proportional to the speed to within 0.1%.
inline constexpr uint64_t kSimUnitsPerTask = 1000;

struct WorkloadModel {
  enum class Arrival { kPoisson, kClosed, kTrace };
  // [[workload.stream]]: another owner's jobs of one class, arriving on
  // their own (poisson or closed), besides the main workload
  // (docs/SIMULATOR.md, "Owners").
  struct Stream {
    std::string owner;
    uint32_t cls = 0;  // index into classes (`class = NAME`)
    Arrival arrival = Arrival::kPoisson;
    double rate = 1.0;
    uint32_t outstanding = 1;
    double think_s = 0;
    uint64_t jobs = 100;
    int32_t priority = 0;
  };
  Arrival arrival = Arrival::kPoisson;
  double rate = 1.0;         // poisson: jobs per virtual second
  uint32_t outstanding = 1;  // closed: jobs in flight
  double think_s = 0;        // closed: pause between a finish and the next submit
  uint64_t jobs = 100;       // stop after this many jobs ...
  uint64_t tasks = 0;        // ... or after this many tasks (0 = use jobs)
  std::vector<JobClass> classes;
  std::string owner;            // JobDef::owner of the main workload's jobs
  std::vector<Stream> streams;  // other owners' jobs
};

// One task of a replayed trace.
struct TraceTask {
  uint64_t executor = 0;     // listed executor id (mod executors)
  double duration = 0;       // end - start
  double normal = 0;         // duration elsewhere (see docs/SIMULATOR.md)
  std::string task_class;
  double input_size = 0;
};
struct TraceJob {
  double submit = 0;         // earliest start of its tasks, relative to the trace's first
  std::vector<TraceTask> tasks;
};

// The [live] section: the scenario scaled down to real daemons on loopback
// (`tailcut bench`, programs/tailcut/live.h; docs/benchmarks/live.md).
// `tailcut sim --live-model` simulates the same setup (LiveAsSimScenario).
struct LiveModel {
  uint32_t executors = 4;
  uint32_t slots = 2;
  std::string kernel = "sleep";     // sleep | spin | noop | exec (/bin/sleep task_ms, no sigma)
  double task_ms = 20;              // median task time
  double sigma = 0.3;               // lognormal noise of the sleep kernel
  uint32_t jobs = 50;
  uint32_t tasks_per_job = 16;
  std::string arrival = "poisson";  // poisson | closed
  double rate = 0;                  // poisson jobs/s; 0 = 50% load of the slots
  uint32_t outstanding = 2;         // closed: jobs in flight
  // Faults (executor flags; docs/EXECUTOR.md "Fault injection").
  int64_t fail_slow_executor = -1;  // -1: none (0-based index)
  double fail_slow_factor = 5;
  double fail_slow_at_s = 0;        // seconds after the workload starts
  double delay_prob = 0;            // every executor: each attempt waits delay_ms first
  double delay_ms = 0;              //   with probability delay_prob (random stragglers)
  int64_t crash_executor = -1;      // -1: none
  double crash_at_s = 0;            // seconds after the workload starts
  bool crash_restart = false;       // start a fresh executor in its place
  double lost_after_s = 1.0;        // the live core's silence-to-lost time
  double network_ms = 0.15;         // one-way loopback delay assumed by --live-model
  int64_t idempotent = -1;          // the jobs' JobSpec.idempotent: 1, 0, -1 = unset (the kernel's)
};
struct Scenario {
  std::string name;
  std::string origin;             // file it came from
  uint64_t seed = 1;
  double max_time_s = 1e7;        // virtual-time safety stop
  CoreOptions core;               // [core]; simulator default lost_after_s = 0
  PredictorOptions predictor;     // [predictor]: the core's PredictorSuite
  std::string chain = "none";     // policies.chain as one --policy entry ("a+b"): the runs' default
  bool heartbeats = false;        // true when core.lost_after_s > 0
  // The driver's tick (heartbeats, the stall check); 0: the core's policy
  // interval. The schedule does not depend on it (docs/PLACEMENT.md).
  double tick_s = 0;
  ClusterModel cluster;
  WorkloadModel workload;
  std::vector<TraceJob> trace;    // when workload.arrival = trace
  LiveModel live;
  Config config;                  // the whole file; policies read [policies.NAME]
};

// Reads a scenario; [core], [predictor] and [policies.*] as the daemon reads
// them (LoadSchedulingConfig); unknown keys anywhere are errors.
// `overrides`: KEY=VALUE (TOML values), applied before parsing (`tailcut sim --set`).
StatusOr<Scenario> LoadScenario(const std::string& path, const std::vector<std::string>& overrides = {});
StatusOr<Scenario> ParseScenario(Config cfg, const std::string& base_dir);

// The [live] section as a simulation scenario (`tailcut sim --live-model`):
// live.executors x live.slots at speed 1, a constant live.network_ms one-way
// delay, one job class of live.tasks_per_job tasks whose time is
// lognormal(task_ms, sigma) (the sleep kernel's law), random delays as a
// straggler mixture (p = delay_prob, factor 1 + delay_ms / task_ms), the
// fail-slow and crash faults (crash detected after live.lost_after_s; a
// restart is not modelled), and live.arrival / LiveRate() / live.jobs.
Scenario LiveAsSimScenario(const Scenario& scenario);
// live.rate, or when 0 the Poisson rate that keeps half the slots busy.
double LiveRate(const LiveModel& live);
// Mean task time of the live kernel (seconds), delays included.
double LiveMeanTaskS(const LiveModel& live);
// Submit times (seconds from the workload's start) of `jobs` Poisson
// arrivals at LiveRate: what `tailcut bench` uses with this seed, and what
// its clairvoyant bound replays.
std::vector<double> LiveArrivals(const LiveModel& live, uint64_t seed, uint32_t jobs);

// Trace CSV (docs/TRACE_FORMAT.md, parsed by the predictors' ReadTraceCsv):
// one row per task, grouped into jobs by `job`.
StatusOr<std::vector<TraceJob>> LoadTraceCsv(const std::string& path);
// The same on rows already parsed (ParseTraceCsv); errors name `origin`.
StatusOr<std::vector<TraceJob>> TraceJobsFromRows(const std::vector<TraceRow>& rows, const std::string& origin);

}  // namespace tailcut::sim
