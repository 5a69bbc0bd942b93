// The simulator's one event loop (simulator.cpp), for one tier and two
// (`[cluster.edges]`, docs/EDGE.md "Two tiers"; the edges' part is in
// two_tier.cpp). A top SchedulerCore takes the workload's jobs; how its
// launches are routed is the only difference between the tiers:
//
//   one tier:  top core -> modelled executors (fleet 0)
//   two tiers: top core -> link -> edge e (a one-task job on edge e's own
//              core, as the live edge's parent link runs it) -> its
//              modelled devices (fleet e)
//
// The loop (ticks, wake-ups, the stall check), the arrivals, the modelled
// executors (queues, progress, fail-slow, crashes, failures, drops) and the
// bookkeeping of results are one piece for both.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <queue>
#include <unordered_map>
#include <vector>

#include "arrivals.h"
#include "tailcut/core/edge_quorum.h"
#include "tailcut/core/scheduler_core.h"
#include "tailcut/sim/scenario.h"
#include "tailcut/sim/simulator.h"

namespace tailcut::sim::loop {

inline constexpr const char* kSimKernel = "sim";  // every simulated task runs it
inline constexpr const char* kQuorumWhy = "edge quorum: the edge closed its part and handed the task back (simulated)";

enum class Ev : uint8_t {
  kArrival,   // submit the next job (a = 0: the main workload's; s + 1: stream s's)
  kReceive,   // a launch reaches its executor (a = attempt; fleet)
  kCancel,    // a cancel reaches its executor (a = attempt; fleet)
  kFinish,    // an attempt ends on its executor: done, failed or dropped (a = attempt, gen; fleet)
  kResult,    // its success reaches the fleet's core (a = attempt, x = run_s; fleet)
  kFailed,    // its failure reaches the fleet's core (a = attempt, x = run_s; fleet)
  kDropped,   // its drop reaches the fleet's core (a = attempt; fleet)
  kProgress,  // the executor reports the attempt's next progress fraction (a = attempt, gen; fleet)
  kTick,      // every core's Tick()
  kWakeUp,    // a wake-up a policy asked for is due (SchedulerCore::NextWakeUp; a = core index)
  kSlow,      // executor a's run-time factor becomes x (fleet 0)
  kCrash,     // executor a dies (fleet 0)
  kDetect,    // the core learns executor a died (fleet 0)
  // Two tiers only (two_tier.cpp); fleet = the edge.
  kEdgeReceive,    // a top launch reaches its edge (a = top attempt)
  kEdgeCancel,     // a top cancel reaches its edge (a = top attempt)
  kParentStarted,  // an edge's "started" reaches the top core (a = top attempt)
  kParentResult,   // an edge's commit reaches the top core (a = top attempt, x = run_s)
  kParentDropped,  // an edge's hand-back reaches the top core (a = top attempt)
};

struct Event {
  double t;
  uint64_t seq;
  uint64_t a;
  double x;
  uint32_t gen;
  uint32_t fleet;
  Ev type;
};
struct Later {
  bool operator()(const Event& l, const Event& r) const { return l.t != r.t ? l.t > r.t : l.seq > r.seq; }
};

enum class AState : uint8_t { kInFlight, kQueued, kRunning };
// How the attempt's run ends (drawn at launch).
enum class AEnd : uint8_t { kSucceed, kFail, kDrop };

struct SimAttempt {
  uint32_t exec = 0;  // executor index in its fleet
  AState state = AState::kInFlight;
  AEnd end = AEnd::kSucceed;
  uint16_t reports = 0;  // progress reports sent so far
  uint32_t gen = 0;      // bumps when the finish time is rescheduled
  double total = 0;      // run time of the whole attempt at factor 1
  double span = 0;       // run time until it ends (< total when it fails or is dropped)
  double work = 0;       // remaining run time (of span) at factor 1
  double start = -1;
  double last_update = 0;  // when `work` was last brought up to date
  AttemptId top = 0;       // two tiers: the top attempt it serves
};

struct SimExec {
  ExecutorId id = 0;
  double speed = 1;   // run-time multiplier, fixed
  double factor = 1;  // fail-slow multiplier, changes over time
  bool crashed = false;
  std::vector<AttemptId> running;
  std::deque<AttemptId> queue;
};

// Modelled executors under one core: the cluster (one tier), an edge's
// devices (two tiers).
struct Fleet {
  SchedulerCore* core = nullptr;
  uint32_t first = 0;  // cluster-wide index of its first executor (speeds, traces)
  std::vector<SimExec> execs;
  std::unordered_map<ExecutorId, uint32_t> index;
  std::unordered_map<AttemptId, SimAttempt> attempts;
};

// A top job: what the workload made of it.
struct JobInfo {
  uint32_t cls = 0;
  int64_t trace = -1;              // index into the trace, or -1
  std::vector<uint16_t> launches;  // executor attempts launched per task
  int64_t stream = -1;             // [[workload.stream]] index, or -1: the main workload
  uint32_t owner = 0;              // index into SimResult::owners (with streams)
  double submitted = 0;
};

// What an executor attempt runs: a task of a top job.
struct Origin {
  JobId job = 0;  // 0: unknown (the launch is counted and dropped)
  TaskIndex task = 0;
  WorkShare share{};
  AttemptId top = 0;  // two tiers: the top attempt
};

// Two tiers: a top attempt held by an edge as a one-task local job.
struct Held {
  JobId local = 0;
  JobId job = 0;  // the top job
  TaskIndex task = 0;
  WorkShare share{};
  bool started = false;
};
struct Edge {
  std::unique_ptr<SchedulerCore> core;
  ExecutorId top_id = 0;                              // the edge as the top core's executor
  std::unordered_map<AttemptId, Held> held;           // top attempt ->
  std::unordered_map<JobId, AttemptId> by_local_job;  // local job -> top attempt
  std::unique_ptr<EdgeQuorum> quorum;
};
struct TopLaunch {  // a top launch on its way to an edge
  uint32_t edge = 0;
  JobId job = 0;
  TaskIndex task = 0;
  WorkShare share{};
};

class Loop final : public CoreObserver {
 public:
  // `edge_chains`: one per edge when the scenario has [cluster.edges].
  Loop(const Scenario& sc, PolicyChain top_chain, std::vector<PolicyChain> edge_chains, uint64_t seed);
  SimResult Run();

  void OnAttemptEnded(const AttemptRecord& r) override;
  void OnJobFinished(const JobStatusInfo& j) override;

 private:
  bool TwoTier() const { return !edges_.empty(); }
  void Setup();
  bool MoreToSubmit() const { return arrivals_.More(submitted_, result_.tasks); }
  bool Done() const { return !MoreToSubmit() && pending_arrivals_ == 0 && top_.RunningJobs() == 0; }
  void PushRaw(Ev type, double t, uint64_t a, double x, uint32_t gen, uint32_t fleet) {
    pq_.push(Event{t, seq_++, a, x, gen, fleet, type});
  }
  void Push(Ev type, double t, uint64_t a, double x = 0, uint32_t gen = 0, uint32_t fleet = 0) {
    if (type == Ev::kArrival) ++pending_arrivals_;
    ++pending_;
    PushRaw(type, t, a, x, gen, fleet);
  }
  void Handle(const Event& e);
  void Arrive();
  void ArriveStream(size_t s);
  // Submits a job the workload made; false when the core refused it.
  bool SubmitTop(JobDef def, JobInfo info);
  uint32_t OwnerIndex(const std::string& owner);
  // Stream s's next job after one of its jobs ended at `now` (closed loop).
  void StreamAfterEnd(size_t s, bool refused);
  void Drain();
  void OnCommand(size_t core, const Command& c);
  void ArmWakeUps();
  double NetDelay() { return sc_.cluster.network.Sample(net_rng_); }

  // The modelled executors (simulator.cpp).
  void Launch(uint32_t f, const LaunchCmd& l, const Origin& o);
  void CancelOn(uint32_t f, AttemptId id);
  double BaseWork(JobId job, TaskIndex task, const JobInfo& info, uint32_t n, uint32_t exec) const;
  void DrawEnd(JobId job, TaskIndex task, const JobInfo& info, uint32_t n, SimAttempt* a) const;
  void Receive(uint32_t f, AttemptId id);
  void Start(uint32_t f, AttemptId id, SimAttempt& a);
  void PushProgress(uint32_t f, AttemptId id, const SimAttempt& a, double factor);
  void Progress(uint32_t f, AttemptId id, uint32_t gen);
  void StartNext(uint32_t f, SimExec& x);
  void Finish(uint32_t f, AttemptId id, uint32_t gen);
  void CancelAtExecutor(uint32_t f, AttemptId id);
  void SetFactor(uint32_t i, double factor);
  void Crash(uint32_t i, double detect_s);

  // The edges (two_tier.cpp).
  void SetupEdges(std::vector<PolicyChain> chains, const std::vector<double>& speeds);
  void ToEdge(const Command& c);
  void OnEdgeCommand(uint32_t e, const Command& c);
  void EdgeReceive(uint32_t e, AttemptId top);
  void EdgeCancel(uint32_t e, AttemptId top);
  void EdgeStarted(uint32_t e, AttemptId top);
  void Forget(Edge& edge, AttemptId top);
  void MaybeClose(uint32_t e, JobId job);
  double Link() { return sc_.cluster.edges.link.Sample(link_rng_); }

  const Scenario& sc_;
  uint64_t seed_;
  FakeClock clock_;
  SchedulerCore top_;
  Arrivals arrivals_;
  Rng net_rng_, link_rng_;
  uint32_t progress_reports_;  // per attempt; none on two tiers (docs/EDGE.md)

  struct CoreRef {
    SchedulerCore* core;
    double wake_at = -1;  // time of its queued kWakeUp, -1 when none
  };
  std::vector<CoreRef> cores_;  // 0: the top core; two tiers: 1 + e: edge e's
  std::vector<Fleet> fleets_;   // one tier: 0, under the top core; two tiers: e, under edge e
  std::vector<Edge> edges_;
  std::unordered_map<ExecutorId, uint32_t> edge_of_;  // the top core's executor id -> edge
  std::unordered_map<AttemptId, TopLaunch> to_edge_;  // top launches on their way to an edge
  std::unordered_map<JobId, JobInfo> jobs_;

  std::priority_queue<Event, std::vector<Event>, Later> pq_;
  uint64_t seq_ = 0;
  uint64_t pending_ = 0;  // queued events other than ticks and wake-ups
  uint64_t pending_arrivals_ = 0;
  uint64_t submitted_ = 0;
  std::vector<Rng> stream_rng_;             // one per stream, from the seed
  std::vector<uint64_t> stream_submitted_;  // jobs each stream submitted
  std::vector<Command> cmds_;
  SimResult result_;
};

}  // namespace tailcut::sim::loop
