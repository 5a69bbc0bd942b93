#include "two_tier.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <memory>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "tailcut/common/log.h"
#include "draws.h"
#include "sim_parts.h"

namespace tailcut::sim {
namespace {

constexpr const char* kSimKernel = "sim";
constexpr const char* kQuorumWhy = "edge quorum: the edge closed its part and handed the task back (simulated)";
constexpr const char* kEdgeFailedWhy = "the edge's job ended without a commit (simulated)";

enum class Ev : uint8_t {
  kArrival,        // the next parent job
  kEdgeReceive,    // a parent launch reaches its edge (a = parent attempt, edge)
  kEdgeCancel,     // a parent cancel reaches its edge (a = parent attempt, edge)
  kDevReceive,     // an edge launch reaches its device (a = edge attempt, edge)
  kDevCancel,      // an edge cancel reaches its device (a = edge attempt, edge)
  kDevFinish,      // a device attempt ends (a = edge attempt, edge)
  kEdgeResult,     // its result reaches the edge core (a = edge attempt, edge, x = run_s)
  kParentStarted,  // an edge's "started" reaches the parent (a = parent attempt)
  kParentResult,   // an edge's commit reaches the parent (a = parent attempt, x = run_s)
  kParentDropped,  // an edge's hand-back reaches the parent (a = parent attempt)
  kTick,
};

struct Event {
  double t;
  uint64_t seq;
  uint64_t a;
  double x;
  uint32_t edge;
  Ev type;
};
struct Later {
  bool operator()(const Event& l, const Event& r) const { return l.t != r.t ? l.t > r.t : l.seq > r.seq; }
};

struct Device {
  ExecutorId id = 0;
  double speed = 1;
  std::vector<AttemptId> running;
  std::deque<AttemptId> queue;
};

struct DevAttempt {
  uint32_t dev = 0;
  AttemptId parent = 0;  // the parent attempt it serves
  bool running = false;
  double start = 0;
  double span = 0;       // service time on this device
};

// A parent attempt held by an edge: its local one-task job.
struct Held {
  JobId local = 0;
  JobId parent_job = 0;
  TaskIndex task = 0;
  bool started = false;
};

struct Group {  // one parent job's tasks on one edge
  uint32_t received = 0, committed = 0, held = 0;
};

struct Edge {
  std::unique_ptr<SchedulerCore> core;
  ExecutorId parent_id = 0;
  std::vector<Device> devices;
  std::unordered_map<ExecutorId, uint32_t> dev_index;
  std::unordered_map<AttemptId, DevAttempt> attempts;
  std::unordered_map<AttemptId, Held> held;            // parent attempt ->
  std::unordered_map<JobId, AttemptId> by_local_job;   // local job -> parent attempt
  std::unordered_map<JobId, Group> groups;             // parent job ->
  std::unordered_set<JobId> closed;                    // parent jobs whose part closed here
};

struct ParentLaunch {
  uint32_t edge = 0;
  JobId job = 0;
  TaskIndex task = 0;
};

struct JobInfo {
  uint32_t cls = 0;
  std::vector<uint16_t> launches;  // device attempts launched per task
};

class TwoTier final : public CoreObserver {
 public:
  TwoTier(const Scenario& sc, PolicyChain parent_chain, std::vector<PolicyChain> edge_chains, uint64_t seed)
      : sc_(sc),
        seed_(seed),
        parent_(sc.core, &clock_, std::move(parent_chain), std::make_unique<PredictorSuite>(sc.predictor)),
        workload_rng_(draws::WorkloadRng(seed)),
        net_rng_(draws::NetworkRng(seed)),
        link_rng_(Rng(Mix(seed ^ 0x4444))) {
    parent_.AddObserver(this);
    for (auto& c : sc_.workload.classes) total_weight_ += c.weight;
    const EdgeTierModel& et = sc_.cluster.edges;
    const std::vector<double> speeds = draws::Speeds(sc_.cluster, seed_);
    edges_.resize(et.count);
    for (uint32_t e = 0; e < et.count; ++e) {
      Edge& edge = edges_[e];
      edge.core = std::make_unique<SchedulerCore>(sc.core, &clock_, std::move(edge_chains[e]),
                                                  std::make_unique<PredictorSuite>(sc.predictor));
      edge.devices.resize(et.executors_per_edge);
      for (uint32_t d = 0; d < et.executors_per_edge; ++d) {
        ExecutorDesc desc;
        desc.name = "edge" + std::to_string(e) + "-dev" + std::to_string(d);
        desc.host = "sim";
        desc.slots = sc_.cluster.slots;
        desc.kernels = {kSimKernel};
        edge.devices[d].speed = speeds[e * et.executors_per_edge + d];
        edge.devices[d].id = edge.core->AddExecutor(desc);
        edge.dev_index[edge.devices[d].id] = d;
      }
      // The parent sees the edge as one executor offering its whole fleet.
      ExecutorDesc desc;
      desc.name = "edge" + std::to_string(e);
      desc.host = "sim";
      desc.slots = et.executors_per_edge * sc_.cluster.slots;
      desc.kernels = {kSimKernel};
      edge.parent_id = parent_.AddExecutor(desc);
      edge_of_[edge.parent_id] = e;
    }
  }

  SimResult Run() {
    auto wall0 = std::chrono::steady_clock::now();
    const WorkloadModel& w = sc_.workload;
    switch (w.arrival) {
      case WorkloadModel::Arrival::kPoisson: Push(Ev::kArrival, workload_rng_.Exp(1.0 / w.rate), 0); break;
      case WorkloadModel::Arrival::kClosed:
        for (uint32_t i = 0; i < w.outstanding && i < std::max<uint64_t>(w.jobs, 1); ++i) Push(Ev::kArrival, 0, 0);
        break;
      case WorkloadModel::Arrival::kTrace: break;  // refused by RunPolicy
    }
    pq_.push(Event{0, seq_++, 0, 0, 0, Ev::kTick});
    const double interval = sc_.core.policy_interval_s;
    double idle_limit = sc_.core.infeasible_grace_s + 60;
    for (auto& c : sc_.workload.classes) idle_limit = std::max(idle_limit, c.deadline_s + 60);
    double last_activity = 0;
    while (!pq_.empty()) {
      Event e = pq_.top();
      pq_.pop();
      if (e.t > sc_.max_time_s) break;
      clock_.Set(e.t);
      ++result_.events;
      if (e.type == Ev::kTick) {
        if (Done()) continue;
        if (sc_.heartbeats) {
          for (Edge& edge : edges_) {
            parent_.ExecutorSeen(edge.parent_id);
            for (Device& d : edge.devices) edge.core->ExecutorSeen(d.id);
          }
        }
        parent_.Tick();
        for (Edge& edge : edges_) edge.core->Tick();
        Drain();
        if (parent_.LiveAttempts() > 0 || pending_ > 0) last_activity = e.t;
        if (e.t - last_activity > idle_limit) {
          TC_LOG(Warn) << "two-tier simulation stalled at t=" << e.t << " s with " << parent_.RunningJobs()
                       << " jobs unfinished; stopping";
          break;
        }
        pq_.push(Event{e.t + interval, seq_++, 0, 0, 0, Ev::kTick});
        continue;
      }
      --pending_;
      last_activity = e.t;
      Handle(e);
      Drain();
    }
    parts::FinishRun(&result_, clock_.Now(), parent_.RunningJobs(), wall0);
    return std::move(result_);
  }

  void OnAttemptEnded(const AttemptRecord& r) override { parts::RecordAttempt(&result_, r); }
  void OnJobFinished(const JobStatusInfo& j) override {
    parts::RecordJob(&result_, j);
    jobs_.erase(j.id);
    if (sc_.workload.arrival == WorkloadModel::Arrival::kClosed && MoreToSubmit())
      Push(Ev::kArrival, clock_.Now() + sc_.workload.think_s, 0);
  }

 private:
  bool MoreToSubmit() const {
    const WorkloadModel& w = sc_.workload;
    if (w.tasks > 0) return result_.tasks < w.tasks;
    return submitted_ < w.jobs;
  }
  bool Done() const { return !MoreToSubmit() && pending_arrivals_ == 0 && parent_.RunningJobs() == 0; }

  void Push(Ev type, double t, uint64_t a, double x = 0, uint32_t edge = 0) {
    if (type == Ev::kArrival) ++pending_arrivals_;
    ++pending_;
    pq_.push(Event{t, seq_++, a, x, edge, type});
  }
  double Net() { return sc_.cluster.network.Sample(net_rng_); }
  double Link() { return sc_.cluster.edges.link.Sample(link_rng_); }

  void Handle(const Event& e) {
    switch (e.type) {
      case Ev::kArrival: --pending_arrivals_; Arrive(); break;
      case Ev::kEdgeReceive: EdgeReceive(e.edge, e.a); break;
      case Ev::kEdgeCancel: EdgeCancel(e.edge, e.a); break;
      case Ev::kDevReceive: DevReceive(e.edge, e.a); break;
      case Ev::kDevCancel: DevCancel(e.edge, e.a); break;
      case Ev::kDevFinish: DevFinish(e.edge, e.a); break;
      case Ev::kEdgeResult: edges_[e.edge].core->AttemptSucceeded(e.a, std::string(), e.x); break;
      case Ev::kParentStarted: parent_.AttemptStarted(e.a); break;
      case Ev::kParentResult: parent_.AttemptSucceeded(e.a, std::string(), e.x); break;
      case Ev::kParentDropped: ++result_.dropped; parent_.AttemptDropped(e.a, kQuorumWhy); break;
      case Ev::kTick: break;
    }
  }

  void Arrive() {
    if (!MoreToSubmit()) return;
    const WorkloadModel& w = sc_.workload;
    const draws::JobDraw jd = draws::DrawJob(w, total_weight_, workload_rng_);
    const JobClass& c = w.classes[jd.cls];
    JobDef def = parts::ClassJob(c, jd.tasks, kSimKernel);
    if (w.arrival == WorkloadModel::Arrival::kPoisson)
      Push(Ev::kArrival, clock_.Now() + workload_rng_.Exp(1.0 / w.rate), 0);
    ++submitted_;
    result_.tasks += jd.tasks;
    auto id = parent_.SubmitJob(std::move(def));
    if (!id.ok()) {
      TC_LOG(Warn) << "job rejected: " << id.status().message();
      ++result_.failed;
      ++result_.jobs;
      if (w.arrival == WorkloadModel::Arrival::kClosed && MoreToSubmit()) Push(Ev::kArrival, clock_.Now(), 0);
      return;
    }
    if (*id > result_.latencies.size()) result_.latencies.resize(*id, std::nan(""));
    JobInfo info;
    info.cls = jd.cls;
    info.launches.assign(jd.tasks, 0);
    jobs_.emplace(*id, std::move(info));
  }

  // ------------------------------------------------------------ commands --
  void Drain() {
    for (bool any = true; any;) {
      any = false;
      cmds_.clear();
      parent_.TakeCommands(&cmds_);
      any |= !cmds_.empty();
      for (Command& c : cmds_) OnParentCommand(c);
      for (uint32_t e = 0; e < edges_.size(); ++e) {
        cmds_.clear();
        edges_[e].core->TakeCommands(&cmds_);
        any |= !cmds_.empty();
        for (Command& c : cmds_) OnEdgeCommand(e, c);
      }
    }
  }

  void OnParentCommand(const Command& c) {
    if (auto* l = std::get_if<LaunchCmd>(&c)) {
      if (l->copy) ++result_.copies;
      auto it = edge_of_.find(l->executor);
      if (it == edge_of_.end()) return;
      launches_[l->attempt] = ParentLaunch{it->second, l->job, l->task};
      Push(Ev::kEdgeReceive, clock_.Now() + Link(), l->attempt, 0, it->second);
    } else if (auto* x = std::get_if<CancelCmd>(&c)) {
      auto it = edge_of_.find(x->executor);
      if (it != edge_of_.end()) Push(Ev::kEdgeCancel, clock_.Now() + Link(), x->attempt, 0, it->second);
    }
  }

  void OnEdgeCommand(uint32_t e, const Command& c) {
    Edge& edge = edges_[e];
    if (auto* l = std::get_if<LaunchCmd>(&c)) {
      ++result_.attempts;
      if (l->copy) ++result_.copies;
      auto p = edge.by_local_job.find(l->job);
      auto d = edge.dev_index.find(l->executor);
      if (p == edge.by_local_job.end() || d == edge.dev_index.end()) return;
      const Held& h = edge.held.at(p->second);
      auto ji = jobs_.find(h.parent_job);
      if (ji == jobs_.end()) return;
      uint32_t n = ji->second.launches[h.task]++;
      DevAttempt a;
      a.dev = d->second;
      a.parent = p->second;
      a.span = sc_.workload.classes[ji->second.cls].task_time.SampleBits(
                   draws::TaskBits(seed_, h.parent_job, h.task, n)) *
               edge.devices[a.dev].speed;
      edge.attempts.emplace(l->attempt, a);
      Push(Ev::kDevReceive, clock_.Now() + Net(), l->attempt, 0, e);
    } else if (auto* x = std::get_if<CancelCmd>(&c)) {
      Push(Ev::kDevCancel, clock_.Now() + Net(), x->attempt, 0, e);
    } else if (auto* tc = std::get_if<TaskCommittedCmd>(&c)) {
      auto p = edge.by_local_job.find(tc->job);
      if (p == edge.by_local_job.end()) return;
      AttemptId pa = p->second;
      JobId parent_job = edge.held.at(pa).parent_job;
      Push(Ev::kParentResult, clock_.Now() + Link(), pa, tc->run_s);
      if (auto g = edge.groups.find(parent_job); g != edge.groups.end()) ++g->second.committed;
      Forget(edge, pa);
      MaybeClose(e, parent_job);
    } else if (auto* f = std::get_if<JobFinishedCmd>(&c)) {
      auto p = edge.by_local_job.find(f->job);
      if (p == edge.by_local_job.end()) return;  // committed, or cancelled by the parent
      AttemptId pa = p->second;
      Forget(edge, pa);
      TC_LOG(Debug) << kEdgeFailedWhy << ": " << f->reason;
      Push(Ev::kParentDropped, clock_.Now() + Link(), pa);
    }
  }

  void Forget(Edge& edge, AttemptId pa) {
    auto it = edge.held.find(pa);
    if (it == edge.held.end()) return;
    edge.by_local_job.erase(it->second.local);
    if (auto g = edge.groups.find(it->second.parent_job); g != edge.groups.end() && --g->second.held == 0)
      edge.groups.erase(g);
    edge.held.erase(it);
  }

  // Edge-level quorum: once edge_quorum of the parent job's tasks received
  // here committed, the rest are cancelled here and handed back.
  void MaybeClose(uint32_t e, JobId parent_job) {
    const double q = sc_.cluster.edges.edge_quorum;
    Edge& edge = edges_[e];
    if (q <= 0 || edge.closed.count(parent_job)) return;
    auto g = edge.groups.find(parent_job);
    if (g == edge.groups.end()) return;
    if (g->second.committed < std::ceil(q * g->second.received - 1e-9)) return;
    edge.closed.insert(parent_job);
    std::vector<AttemptId> rest;
    for (auto& [pa, h] : edge.held)
      if (h.parent_job == parent_job) rest.push_back(pa);
    std::sort(rest.begin(), rest.end());  // unordered_map order must not leak into the run
    for (AttemptId pa : rest) {
      JobId local = edge.held.at(pa).local;
      Forget(edge, pa);
      (void)edge.core->CancelJob(local, kQuorumWhy);
      Push(Ev::kParentDropped, clock_.Now() + Link(), pa);
    }
  }

  // -------------------------------------------------------------- edges --
  void EdgeReceive(uint32_t e, AttemptId pa) {
    auto it = launches_.find(pa);
    if (it == launches_.end()) return;  // cancelled before it arrived
    const ParentLaunch pl = it->second;
    launches_.erase(it);
    auto ji = jobs_.find(pl.job);
    if (ji == jobs_.end()) return;  // the parent's job ended meanwhile
    Edge& edge = edges_[e];
    JobDef def;
    def.name = "parent task";
    def.templ.kernel = kSimKernel;
    def.templ.task_class = sc_.workload.classes[ji->second.cls].name;
    def.template_count = 1;
    def.stream_results = true;
    auto id = edge.core->SubmitJob(std::move(def));
    if (!id.ok()) {
      Push(Ev::kParentDropped, clock_.Now() + Link(), pa);
      return;
    }
    edge.held[pa] = Held{*id, pl.job, pl.task, false};
    edge.by_local_job[*id] = pa;
    Group& g = edge.groups[pl.job];
    ++g.received;
    ++g.held;
  }

  void EdgeCancel(uint32_t e, AttemptId pa) {
    launches_.erase(pa);  // still on its way: it will not start
    Edge& edge = edges_[e];
    auto it = edge.held.find(pa);
    if (it == edge.held.end()) return;
    JobId local = it->second.local;
    Forget(edge, pa);
    (void)edge.core->CancelJob(local, "cancelled by the parent (simulated)");
  }

  // ------------------------------------------------------------ devices --
  void DevReceive(uint32_t e, AttemptId a) {
    Edge& edge = edges_[e];
    auto it = edge.attempts.find(a);
    if (it == edge.attempts.end()) return;
    Device& d = edge.devices[it->second.dev];
    if (d.running.size() < sc_.cluster.slots) DevStart(e, a, it->second);
    else d.queue.push_back(a);
  }

  void DevStart(uint32_t e, AttemptId a, DevAttempt& da) {
    Edge& edge = edges_[e];
    da.running = true;
    da.start = clock_.Now();
    edge.devices[da.dev].running.push_back(a);
    Push(Ev::kDevFinish, da.start + da.span, a, 0, e);
    edge.core->AttemptStarted(a);
    if (auto h = edge.held.find(da.parent); h != edge.held.end() && !h->second.started) {
      h->second.started = true;
      Push(Ev::kParentStarted, clock_.Now() + Link(), da.parent);
    }
  }

  void DevStartNext(uint32_t e, Device& d) {
    Edge& edge = edges_[e];
    while (d.running.size() < sc_.cluster.slots && !d.queue.empty()) {
      AttemptId a = d.queue.front();
      d.queue.pop_front();
      if (auto it = edge.attempts.find(a); it != edge.attempts.end()) DevStart(e, a, it->second);
    }
  }

  void DevFinish(uint32_t e, AttemptId a) {
    Edge& edge = edges_[e];
    auto it = edge.attempts.find(a);
    if (it == edge.attempts.end() || !it->second.running) return;  // cancelled meanwhile
    double run = clock_.Now() - it->second.start;
    result_.machine_s += run;
    Device& d = edge.devices[it->second.dev];
    parts::RemoveFrom(d.running, a);
    edge.attempts.erase(it);
    DevStartNext(e, d);
    Push(Ev::kEdgeResult, clock_.Now() + Net(), a, run, e);
  }

  void DevCancel(uint32_t e, AttemptId a) {
    Edge& edge = edges_[e];
    auto it = edge.attempts.find(a);
    if (it == edge.attempts.end()) return;
    Device& d = edge.devices[it->second.dev];
    if (it->second.running) {
      result_.machine_s += clock_.Now() - it->second.start;
      parts::RemoveFrom(d.running, a);
      edge.attempts.erase(it);
      DevStartNext(e, d);
      return;
    }
    if (auto q = std::find(d.queue.begin(), d.queue.end(), a); q != d.queue.end()) d.queue.erase(q);
    edge.attempts.erase(it);
  }

  const Scenario& sc_;
  uint64_t seed_;
  FakeClock clock_;
  SchedulerCore parent_;
  Rng workload_rng_, net_rng_, link_rng_;
  double total_weight_ = 0;
  std::vector<Edge> edges_;
  std::unordered_map<ExecutorId, uint32_t> edge_of_;      // parent executor id -> edge index
  std::unordered_map<AttemptId, ParentLaunch> launches_;  // parent launches on their way to an edge
  std::unordered_map<JobId, JobInfo> jobs_;
  std::priority_queue<Event, std::vector<Event>, Later> pq_;
  uint64_t seq_ = 0, pending_ = 0, pending_arrivals_ = 0, submitted_ = 0;
  std::vector<Command> cmds_;
  SimResult result_;
};

}  // namespace

SimResult RunTwoTier(const Scenario& scenario, PolicyChain parent_chain, std::vector<PolicyChain> edge_chains,
                     uint64_t seed) {
  TwoTier sim(scenario, std::move(parent_chain), std::move(edge_chains), seed);
  return sim.Run();
}

}  // namespace tailcut::sim
