#include "tailcut/sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "draws.h"
#include "sim_loop.h"
#include "sim_parts.h"
#include "tailcut/common/log.h"
#include "tailcut/common/stats.h"
#include "tailcut/policies/scheduling_config.h"

namespace tailcut::sim {

void Summarise(SimResult* r) {
  std::vector<double> v;
  v.reserve(r->latencies.size());
  for (double x : r->latencies)
    if (!std::isnan(x)) v.push_back(x);
  std::sort(v.begin(), v.end());
  r->mean = Mean(v);
  r->p50 = Quantile(v, 0.50);
  r->p90 = Quantile(v, 0.90);
  r->p99 = Quantile(v, 0.99);
  r->p999 = Quantile(v, 0.999);
  r->extra_work = r->committed_s > 0 ? (r->machine_s - r->committed_s) / r->committed_s : 0;
  for (OwnerResult& o : r->owners) {
    std::sort(o.latencies.begin(), o.latencies.end());
    std::sort(o.waits.begin(), o.waits.end());
    o.jobs = o.latencies.size();
    o.p50 = Quantile(o.latencies, 0.50);
    o.p99 = Quantile(o.latencies, 0.99);
    o.wait_p50 = Quantile(o.waits, 0.50);
    o.wait_p99 = Quantile(o.waits, 0.99);
  }
}

namespace loop {
namespace {

constexpr const char* kFailError = "simulated failure (workload.class.fail_prob)";
constexpr const char* kDropWhy = "executor dropped it (simulated, cluster.drop_prob)";

// A divisible job's task draws its time for an equal share; its work is
// scaled to the share the scheduler gave it.
double ShareOfWork(const WorkShare& share, const JobInfo& info) {
  if (!share.divisible()) return 1.0;
  return static_cast<double>(share.count) * static_cast<double>(info.launches.size()) /
         static_cast<double>(share.total);
}

}  // namespace

Loop::Loop(const Scenario& sc, PolicyChain top_chain, std::vector<PolicyChain> edge_chains, uint64_t seed)
    : sc_(sc),
      seed_(seed),
      top_(sc.core, &clock_, std::move(top_chain), std::make_unique<PredictorSuite>(sc.predictor)),
      arrivals_(sc, seed),
      net_rng_(draws::NetworkRng(seed)),
      link_rng_(Rng(Mix(seed ^ 0x4444))),
      progress_reports_(sc.cluster.edges.count > 0 ? 0 : sc.cluster.progress_reports) {
  top_.AddObserver(this);
  cores_.push_back(CoreRef{&top_});
  const std::vector<double> speeds = draws::Speeds(sc_.cluster, seed_);
  if (sc_.cluster.edges.count > 0) {
    SetupEdges(std::move(edge_chains), speeds);
    return;
  }
  Fleet& f = fleets_.emplace_back();
  f.core = &top_;
  f.execs.resize(sc_.cluster.executors);
  for (uint32_t i = 0; i < sc_.cluster.executors; ++i) {
    ExecutorDesc d;
    d.name = "sim" + std::to_string(i);
    d.host = "sim";
    d.slots = sc_.cluster.slots;
    d.memory_mb = sc_.cluster.memory_mb;
    d.gpus = sc_.cluster.gpus;
    d.kernels = {kSimKernel};  // executors list what they run; modelled ones run the modelled kernel
    SimExec& x = f.execs[i];
    x.speed = speeds[i];
    x.id = top_.AddExecutor(d);
    f.index[x.id] = i;
  }
}

SimResult Loop::Run() {
  auto wall0 = std::chrono::steady_clock::now();
  Setup();
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
      if (Done()) continue;  // stop ticking; the queue drains
      if (sc_.heartbeats) {
        for (const Edge& edge : edges_) top_.ExecutorSeen(edge.top_id);
        for (Fleet& f : fleets_)
          for (const SimExec& x : f.execs)
            if (!x.crashed && x.id) f.core->ExecutorSeen(x.id);
      }
      for (CoreRef& c : cores_) c.core->Tick();
      Drain();
      if (top_.LiveAttempts() > 0 || pending_ > 0) last_activity = e.t;
      if (e.t - last_activity > idle_limit) {
        TC_LOG(Warn) << "simulation stalled at t=" << e.t << " s with " << top_.RunningJobs()
                     << " jobs unfinished; stopping";
        break;
      }
      // The cores ask for their own timers (NextWakeUp, ArmWakeUps); ticks
      // carry heartbeats and the stall check, by default at the shortest
      // policy interval.
      double interval = sc_.tick_s;
      if (interval <= 0) {
        interval = top_.PolicyInterval();
        for (const CoreRef& c : cores_) interval = std::min(interval, c.core->PolicyInterval());
      }
      PushRaw(Ev::kTick, e.t + interval, 0, 0, 0, 0);
      continue;
    }
    if (e.type == Ev::kWakeUp) {
      if (e.t == cores_[e.a].wake_at) cores_[e.a].wake_at = -1;
      if (Done()) continue;
      cores_[e.a].core->Tick();  // its timers due now (NextWakeUp)
      Drain();                   // and wake-ups, delivered at exactly the asked time
      continue;
    }
    --pending_;
    last_activity = e.t;
    Handle(e);
    Drain();
  }
  parts::FinishRun(&result_, clock_.Now(), top_.RunningJobs(), wall0);
  return std::move(result_);
}

void Loop::OnAttemptEnded(const AttemptRecord& r) { parts::RecordAttempt(&result_, r); }
void Loop::OnJobFinished(const JobStatusInfo& j) {
  parts::RecordJob(&result_, j);
  auto it = jobs_.find(j.id);
  if (it != jobs_.end() && !result_.owners.empty()) {
    result_.owners[it->second.owner].latencies.push_back(j.finished - j.submitted);
    const int64_t stream = it->second.stream;
    jobs_.erase(it);
    if (stream >= 0) return StreamAfterEnd(static_cast<size_t>(stream), false);
  }
  jobs_.erase(j.id);
  if (double t = arrivals_.AfterEnd(clock_.Now(), false, submitted_, result_.tasks); t >= 0) Push(Ev::kArrival, t, 0);
}

void Loop::Setup() {
  const ClusterModel& cl = sc_.cluster;
  for (auto& f : cl.fail_slow) {
    Push(Ev::kSlow, f.at_s, f.executor, f.factor);
    if (f.duration_s > 0) Push(Ev::kSlow, f.at_s + f.duration_s, f.executor, 1.0);
  }
  for (auto& c : cl.crashes) Push(Ev::kCrash, c.at_s, c.executor, c.detect_s);
  for (double t : arrivals_.Initial()) Push(Ev::kArrival, t, 0);
  const std::vector<WorkloadModel::Stream>& streams = sc_.workload.streams;
  if (!streams.empty()) OwnerIndex(sc_.workload.owner);  // the main workload's owner first
  for (size_t s = 0; s < streams.size(); ++s) {
    stream_rng_.emplace_back(Mix(seed_ ^ 0x5757 ^ Mix(s + 1)));
    stream_submitted_.push_back(0);
    OwnerIndex(streams[s].owner);
    if (streams[s].arrival == WorkloadModel::Arrival::kClosed) {
      for (uint64_t k = 0; k < std::min<uint64_t>(streams[s].outstanding, streams[s].jobs); ++k)
        Push(Ev::kArrival, 0, s + 1);
    } else if (streams[s].jobs > 0) {
      Push(Ev::kArrival, stream_rng_[s].Exp(1.0 / streams[s].rate), s + 1);
    }
  }
  PushRaw(Ev::kTick, 0, 0, 0, 0, 0);
}

void Loop::Handle(const Event& e) {
  const uint32_t f = e.fleet;
  switch (e.type) {
    case Ev::kArrival:
      --pending_arrivals_;
      e.a == 0 ? Arrive() : ArriveStream(static_cast<size_t>(e.a - 1));
      break;
    case Ev::kReceive: Receive(f, e.a); break;
    case Ev::kCancel: CancelAtExecutor(f, e.a); break;
    case Ev::kFinish: Finish(f, e.a, e.gen); break;
    case Ev::kResult: fleets_[f].core->AttemptSucceeded(e.a, std::string(), e.x); break;
    case Ev::kFailed:
      ++result_.failed_attempts;
      fleets_[f].core->AttemptFailed(e.a, kFailError, e.x);
      break;
    case Ev::kDropped:
      ++result_.dropped;
      fleets_[f].core->AttemptDropped(e.a, kDropWhy);
      break;
    case Ev::kProgress: Progress(f, e.a, e.gen); break;
    case Ev::kSlow: SetFactor(static_cast<uint32_t>(e.a), e.x); break;
    case Ev::kCrash: Crash(static_cast<uint32_t>(e.a), e.x); break;
    case Ev::kDetect: top_.RemoveExecutor(fleets_[0].execs[e.a].id, true, "crashed (simulated)"); break;
    case Ev::kEdgeReceive: EdgeReceive(f, e.a); break;
    case Ev::kEdgeCancel: EdgeCancel(f, e.a); break;
    case Ev::kParentStarted: top_.AttemptStarted(e.a); break;
    case Ev::kParentResult: top_.AttemptSucceeded(e.a, std::string(), e.x); break;
    case Ev::kParentDropped:
      ++result_.dropped;
      top_.AttemptDropped(e.a, kQuorumWhy);
      break;
    case Ev::kTick:
    case Ev::kWakeUp: break;
  }
}

void Loop::Arrive() {
  if (!MoreToSubmit()) return;
  const Arrivals::Next next = arrivals_.Take(clock_.Now());
  JobDef def;
  JobInfo info;
  if (next.trace >= 0) {
    const TraceJob& tj = sc_.trace[static_cast<size_t>(next.trace)];
    info.trace = next.trace;
    def.name = "trace" + std::to_string(next.trace);
    for (const TraceTask& t : tj.tasks) {
      TaskDef d;
      d.kernel = kSimKernel;
      d.task_class = t.task_class;
      d.input_size = t.input_size;
      def.tasks.push_back(std::move(d));
    }
  } else {
    const JobClass& c = sc_.workload.classes[next.draw.cls];
    info.cls = next.draw.cls;
    def = parts::ClassJob(c, next.draw.tasks, kSimKernel);
    if (c.divisible) def.divisible_units = uint64_t{next.draw.tasks} * kSimUnitsPerTask;
  }
  if (next.then >= 0) Push(Ev::kArrival, next.then, 0);
  ++submitted_;
  def.owner = sc_.workload.owner;
  if (!result_.owners.empty()) info.owner = OwnerIndex(def.owner);
  if (!SubmitTop(std::move(def), std::move(info))) {
    if (double t = arrivals_.AfterEnd(clock_.Now(), true, submitted_, result_.tasks); t >= 0) Push(Ev::kArrival, t, 0);
  }
}

void Loop::ArriveStream(size_t s) {
  const WorkloadModel::Stream& st = sc_.workload.streams[s];
  if (stream_submitted_[s] >= st.jobs) return;
  ++stream_submitted_[s];
  Rng& rng = stream_rng_[s];
  const JobClass& c = sc_.workload.classes[st.cls];
  const uint32_t n = static_cast<uint32_t>(std::max(1.0, std::min(1e6, std::round(c.tasks.Sample(rng)))));
  if (st.arrival == WorkloadModel::Arrival::kPoisson && stream_submitted_[s] < st.jobs)
    Push(Ev::kArrival, clock_.Now() + rng.Exp(1.0 / st.rate), s + 1);
  JobDef def = parts::ClassJob(c, n, kSimKernel);
  def.owner = st.owner;
  def.priority = st.priority;
  JobInfo info;
  info.cls = st.cls;
  info.stream = static_cast<int64_t>(s);
  info.owner = OwnerIndex(st.owner);
  if (!SubmitTop(std::move(def), std::move(info))) StreamAfterEnd(s, true);
}

void Loop::StreamAfterEnd(size_t s, bool refused) {
  const WorkloadModel::Stream& st = sc_.workload.streams[s];
  if (st.arrival != WorkloadModel::Arrival::kClosed || stream_submitted_[s] >= st.jobs) return;
  Push(Ev::kArrival, clock_.Now() + (refused ? 0 : st.think_s), s + 1);
}

uint32_t Loop::OwnerIndex(const std::string& owner) {
  for (uint32_t i = 0; i < result_.owners.size(); ++i)
    if (result_.owners[i].owner == owner) return i;
  OwnerResult o;
  o.owner = owner;
  result_.owners.push_back(std::move(o));
  return static_cast<uint32_t>(result_.owners.size() - 1);
}

bool Loop::SubmitTop(JobDef def, JobInfo info) {
  uint32_t n = def.TaskCount();
  info.launches.assign(n, 0);
  info.submitted = clock_.Now();
  result_.tasks += n;
  auto id = top_.SubmitJob(std::move(def));
  if (!id.ok()) {
    TC_LOG(Warn) << "job rejected: " << id.status().message();
    result_.last_failure = id.status().message();  // as a live submitter hears it
    ++result_.failed;
    ++result_.jobs;
    return false;
  }
  if (*id > result_.latencies.size()) result_.latencies.resize(*id, std::nan(""));
  jobs_.emplace(*id, std::move(info));
  return true;
}

void Loop::Drain() {
  for (;;) {
    bool any = false;
    for (size_t c = 0; c < cores_.size(); ++c) {
      cmds_.clear();
      cores_[c].core->TakeCommands(&cmds_);
      any |= !cmds_.empty();
      for (const Command& cmd : cmds_) OnCommand(c, cmd);
    }
    if (!any) return ArmWakeUps();
  }
}

// How a launch is routed: the top core's go to its executors (one tier) or
// over the link to an edge (two tiers); an edge core's go to its devices.
void Loop::OnCommand(size_t core, const Command& c) {
  if (core == 0 && TwoTier()) return ToEdge(c);
  if (core > 0) return OnEdgeCommand(static_cast<uint32_t>(core - 1), c);
  if (auto* l = std::get_if<LaunchCmd>(&c))
    Launch(0, *l, Origin{l->job, l->task, l->share, 0});
  else if (auto* x = std::get_if<CancelCmd>(&c))
    CancelOn(0, x->attempt);
  // TaskCommitted / JobFinished / ExecutorChanged: seen via the observer.
}

// One queued kWakeUp per core at its earliest pending wake-up: a new one
// only when that is earlier than the one already queued.
void Loop::ArmWakeUps() {
  for (size_t i = 0; i < cores_.size(); ++i) {
    CoreRef& c = cores_[i];
    double t = c.core->NextWakeUp();
    if (t < 0) continue;
    t = std::max(t, clock_.Now());
    if (c.wake_at >= 0 && c.wake_at <= t) continue;
    c.wake_at = t;
    PushRaw(Ev::kWakeUp, t, i, 0, 0, 0);
  }
}

// ------------------------------------------------ modelled executors --

// Service time of the n-th attempt of (job, task) at factor 1 and speed 1:
// counter-based, so it does not depend on what else the policy launched.
double Loop::BaseWork(JobId job, TaskIndex task, const JobInfo& info, uint32_t n, uint32_t exec) const {
  if (info.trace >= 0) {
    const TraceTask& t = sc_.trace[static_cast<size_t>(info.trace)].tasks[task];
    return exec == t.executor % sc_.cluster.executors ? t.duration : t.normal;
  }
  return sc_.workload.classes[info.cls].task_time.SampleBits(draws::TaskBits(seed_, job, task, n),
                                                             draws::TaskBits(seed_, job, task, 0));
}

// Whether the n-th attempt of (job, task) fails or is dropped, and where:
// counter-based like BaseWork, and drawn only when fail_prob / drop_prob
// are set, so other runs keep every draw.
void Loop::DrawEnd(JobId job, TaskIndex task, const JobInfo& info, uint32_t n, SimAttempt* a) const {
  const double fail_p = sc_.workload.classes[info.cls].fail_prob, drop_p = sc_.cluster.drop_prob;
  if (fail_p <= 0 && drop_p <= 0) return;
  uint64_t bits = Mix(seed_ ^ 0x6661696cULL ^ Mix(job * 0xbf58476d1ce4e5b9ULL ^ Mix(task + (uint64_t{n} << 32))));
  double u = ToUnit(Mix(bits));
  if (u < fail_p)
    a->end = AEnd::kFail;
  else if (u < fail_p + drop_p)
    a->end = AEnd::kDrop;
  else
    return;
  a->span = a->total * ToUnit(Mix(bits ^ 0x5bd1e995ULL));  // partway, uniformly
}

// An attempt launched onto an executor of fleet `f`, running `o`.
void Loop::Launch(uint32_t f, const LaunchCmd& l, const Origin& o) {
  ++result_.attempts;
  if (l.copy) ++result_.copies;
  Fleet& fl = fleets_[f];
  auto ji = jobs_.find(o.job);
  auto xi = fl.index.find(l.executor);
  if (ji == jobs_.end() || xi == fl.index.end()) return;  // cannot happen; be safe
  uint32_t n = ji->second.launches[o.task]++;
  if (n == 0 && !result_.owners.empty())  // the task's first launch: its queue wait
    result_.owners[ji->second.owner].waits.push_back(clock_.Now() - ji->second.submitted);
  SimAttempt a;
  a.exec = xi->second;
  a.top = o.top;
  a.total = a.span = BaseWork(o.job, o.task, ji->second, n, fl.first + a.exec) * fl.execs[a.exec].speed *
                     ShareOfWork(o.share, ji->second);
  DrawEnd(o.job, o.task, ji->second, n, &a);
  a.work = a.span;
  fl.attempts.emplace(l.attempt, a);
  double d = NetDelay();
  if (d <= 0)
    Receive(f, l.attempt);
  else
    Push(Ev::kReceive, clock_.Now() + d, l.attempt, 0, 0, f);
}

void Loop::CancelOn(uint32_t f, AttemptId id) {
  double d = NetDelay();
  if (d <= 0)
    CancelAtExecutor(f, id);
  else
    Push(Ev::kCancel, clock_.Now() + d, id, 0, 0, f);
}

void Loop::Receive(uint32_t f, AttemptId id) {
  Fleet& fl = fleets_[f];
  auto it = fl.attempts.find(id);
  if (it == fl.attempts.end()) return;  // cancelled before it arrived
  SimExec& x = fl.execs[it->second.exec];
  if (x.crashed) {
    fl.attempts.erase(it);
    return;
  }
  if (x.running.size() < sc_.cluster.slots) {
    Start(f, id, it->second);
  } else {
    it->second.state = AState::kQueued;
    x.queue.push_back(id);
  }
}

void Loop::Start(uint32_t f, AttemptId id, SimAttempt& a) {
  Fleet& fl = fleets_[f];
  SimExec& x = fl.execs[a.exec];
  double now = clock_.Now();
  a.state = AState::kRunning;
  a.start = now;
  a.last_update = now;
  x.running.push_back(id);
  Push(Ev::kFinish, now + a.work * x.factor, id, 0, ++a.gen, f);
  PushProgress(f, id, a, x.factor);
  fl.core->AttemptStarted(id);
  if (TwoTier()) EdgeStarted(f, a.top);
}

// The next progress report of a running attempt, if it comes before the
// attempt ends; `a.work` must be up to date at now (a.last_update).
void Loop::PushProgress(uint32_t f, AttemptId id, const SimAttempt& a, double factor) {
  const uint32_t n = progress_reports_;
  if (a.reports >= n || a.total <= 0) return;
  double target = a.total * (a.reports + 1) / (n + 1);  // work done at the next report
  double left = target - (a.span - a.work);             // still to do until then
  if (target >= a.span) return;                         // it ends first
  Push(Ev::kProgress, a.last_update + std::max(0.0, left) * factor, id, 0, a.gen, f);
}

void Loop::Progress(uint32_t f, AttemptId id, uint32_t gen) {
  Fleet& fl = fleets_[f];
  auto it = fl.attempts.find(id);
  if (it == fl.attempts.end() || it->second.gen != gen || it->second.state != AState::kRunning) return;
  SimAttempt& a = it->second;
  const uint32_t n = progress_reports_;
  ++a.reports;
  ++result_.progress;
  fl.core->AttemptProgress(id, static_cast<float>(a.reports) / static_cast<float>(n + 1));
  // Bring `work` up to date so the next report is timed from now.
  SimExec& x = fl.execs[a.exec];
  double now = clock_.Now();
  a.work = std::max(0.0, a.work - (now - a.last_update) / x.factor);
  a.last_update = now;
  PushProgress(f, id, a, x.factor);
}

void Loop::StartNext(uint32_t f, SimExec& x) {
  Fleet& fl = fleets_[f];
  while (x.running.size() < sc_.cluster.slots && !x.queue.empty()) {
    AttemptId id = x.queue.front();
    x.queue.pop_front();
    auto it = fl.attempts.find(id);
    if (it != fl.attempts.end()) Start(f, id, it->second);
  }
}

void Loop::Finish(uint32_t f, AttemptId id, uint32_t gen) {
  Fleet& fl = fleets_[f];
  auto it = fl.attempts.find(id);
  if (it == fl.attempts.end() || it->second.gen != gen || it->second.state != AState::kRunning) return;
  double now = clock_.Now();
  double run = now - it->second.start;
  result_.machine_s += run;
  SimExec& x = fl.execs[it->second.exec];
  const AEnd end = it->second.end;
  parts::RemoveFrom(x.running, id);
  fl.attempts.erase(it);
  StartNext(f, x);
  double d = NetDelay();
  Ev ev = end == AEnd::kFail ? Ev::kFailed : end == AEnd::kDrop ? Ev::kDropped : Ev::kResult;
  if (d > 0)
    Push(ev, now + d, id, run, 0, f);
  else
    Handle(Event{now, 0, id, run, 0, f, ev});
}

void Loop::CancelAtExecutor(uint32_t f, AttemptId id) {
  Fleet& fl = fleets_[f];
  auto it = fl.attempts.find(id);
  if (it == fl.attempts.end()) return;  // already finished, or vanished
  SimExec& x = fl.execs[it->second.exec];
  if (it->second.state == AState::kRunning) {
    result_.machine_s += clock_.Now() - it->second.start;
    parts::RemoveFrom(x.running, id);
    fl.attempts.erase(it);
    StartNext(f, x);
    return;
  }
  if (it->second.state == AState::kQueued) {
    auto q = std::find(x.queue.begin(), x.queue.end(), id);
    if (q != x.queue.end()) x.queue.erase(q);
  }
  fl.attempts.erase(it);
}

// Fail-slow onset or end (one tier): running attempts keep the work already
// done and run the rest at the new factor.
void Loop::SetFactor(uint32_t i, double factor) {
  Fleet& fl = fleets_[0];
  SimExec& x = fl.execs[i];
  double now = clock_.Now();
  for (AttemptId id : x.running) {
    SimAttempt& a = fl.attempts.at(id);
    a.work = std::max(0.0, a.work - (now - a.last_update) / x.factor);
    a.last_update = now;
    Push(Ev::kFinish, now + a.work * factor, id, 0, ++a.gen, 0);
    PushProgress(0, id, a, factor);
  }
  x.factor = factor;
}

void Loop::Crash(uint32_t i, double detect_s) {
  Fleet& fl = fleets_[0];
  SimExec& x = fl.execs[i];
  if (x.crashed) return;
  x.crashed = true;
  double now = clock_.Now();
  for (AttemptId id : x.running) {
    auto it = fl.attempts.find(id);
    if (it == fl.attempts.end()) continue;
    result_.machine_s += now - it->second.start;
    fl.attempts.erase(it);
  }
  for (AttemptId id : x.queue) fl.attempts.erase(id);
  x.running.clear();
  x.queue.clear();
  // With heartbeats the core notices on its own (lost_after_s).
  if (!sc_.heartbeats) Push(Ev::kDetect, now + detect_s, i);
}

}  // namespace loop

Simulator::Simulator(const Scenario& scenario, PolicyChain policies, uint64_t seed)
    : Simulator(scenario, std::move(policies), {}, seed) {}
Simulator::Simulator(const Scenario& scenario, PolicyChain policies, std::vector<PolicyChain> edge_chains,
                     uint64_t seed)
    : impl_(new loop::Loop(scenario, std::move(policies), std::move(edge_chains), seed)) {}
Simulator::~Simulator() { delete impl_; }
SimResult Simulator::Run() { return impl_->Run(); }

// What the two-tier model does not cover (docs/EDGE.md, "Two tiers").
static Status CheckTwoTier(const Scenario& sc) {
  const ClusterModel& cl = sc.cluster;
  if (sc.workload.arrival == WorkloadModel::Arrival::kTrace)
    return Status::InvalidArgument("cluster.edges: trace workloads are not modelled on two tiers");
  if (!cl.fail_slow.empty() || !cl.crashes.empty() || cl.drop_prob > 0)
    return Status::InvalidArgument("cluster.edges: fail_slow, crash and drop_prob are not modelled on two tiers");
  for (const JobClass& c : sc.workload.classes)
    if (c.fail_prob > 0) return Status::InvalidArgument("cluster.edges: fail_prob is not modelled on two tiers");
  return Status::Ok();
}

StatusOr<SimResult> RunPolicy(const Scenario& scenario, const std::string& entry, uint64_t seed) {
  auto policies = MakePolicyEntry(entry, scenario.config);
  if (!policies.ok()) return policies.status();
  std::vector<PolicyChain> edge_chains;  // two tiers: every edge runs the same chain
  if (scenario.cluster.edges.count > 0) {
    if (Status s = CheckTwoTier(scenario); !s.ok()) return s;
    for (uint32_t e = 0; e < scenario.cluster.edges.count; ++e) {
      auto chain = MakePolicyEntry(entry, scenario.config);
      if (!chain.ok()) return chain.status();
      edge_chains.push_back(std::move(chain).value());
    }
  }
  Simulator sim(scenario, std::move(policies).value(), std::move(edge_chains), seed);
  SimResult r = sim.Run();
  r.policy = entry;
  return r;
}

}  // namespace tailcut::sim
