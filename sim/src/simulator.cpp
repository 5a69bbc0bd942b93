#include "tailcut/sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <queue>
#include <unordered_map>

#include "tailcut/common/log.h"
#include "tailcut/common/stats.h"
#include "tailcut/plugins/scheduling_config.h"
#include "draws.h"
#include "sim_parts.h"
#include "two_tier.h"

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
}

namespace {

constexpr const char* kSimKernel = "sim";  // every simulated task runs it
constexpr const char* kFailError = "simulated failure (workload.class.fail_prob)";
constexpr const char* kDropWhy = "executor dropped it (simulated, cluster.drop_prob)";

enum class Ev : uint8_t {
  kArrival,   // submit the next job
  kReceive,   // a launch reaches its executor (a = attempt)
  kCancel,    // a cancel reaches its executor (a = attempt)
  kFinish,    // an attempt ends on its executor: done, failed or dropped (a = attempt, gen)
  kResult,    // its success reaches the scheduler (a = attempt, x = run_s)
  kFailed,    // its failure reaches the scheduler (a = attempt, x = run_s)
  kDropped,   // its drop reaches the scheduler (a = attempt)
  kProgress,  // the executor reports the attempt's next progress fraction (a = attempt, gen)
  kTick,      // core.Tick()
  kWakeUp,    // a wake-up a policy asked for is due (SchedulerCore::NextWakeUp)
  kSlow,      // executor a's run-time factor becomes x
  kCrash,     // executor a dies
  kDetect,    // the core learns executor a died
};

struct Event {
  double t;
  uint64_t seq;
  uint64_t a;
  double x;
  uint32_t gen;
  Ev type;
};
struct Later {
  bool operator()(const Event& l, const Event& r) const { return l.t != r.t ? l.t > r.t : l.seq > r.seq; }
};

enum class AState : uint8_t { kInFlight, kQueued, kRunning };
// How the attempt's run ends (drawn at launch).
enum class AEnd : uint8_t { kSucceed, kFail, kDrop };

struct SimAttempt {
  uint32_t exec = 0;        // executor index
  AState state = AState::kInFlight;
  AEnd end = AEnd::kSucceed;
  uint16_t reports = 0;     // progress reports sent so far
  uint32_t gen = 0;         // bumps when the finish time is rescheduled
  double total = 0;         // run time of the whole attempt at factor 1
  double span = 0;          // run time until it ends (< total when it fails or is dropped)
  double work = 0;          // remaining run time (of span) at factor 1
  double start = -1;
  double last_update = 0;   // when `work` was last brought up to date
};

struct SimExec {
  ExecutorId id = 0;
  double speed = 1;         // run-time multiplier, fixed
  double factor = 1;        // fail-slow multiplier, changes over time
  bool crashed = false;
  std::vector<AttemptId> running;
  std::deque<AttemptId> queue;
};

struct JobInfo {
  uint32_t cls = 0;
  int64_t trace = -1;               // index into the trace, or -1
  std::vector<uint16_t> launches;   // attempts launched per task
};

}  // namespace

class Simulator::Impl final : public CoreObserver {
 public:
  Impl(const Scenario& sc, PolicyChain policies, uint64_t seed)
      : sc_(sc),
        seed_(seed),
        core_(sc.core, &clock_, std::move(policies), std::make_unique<PredictorSuite>(sc.predictor)),
        workload_rng_(draws::WorkloadRng(seed)),
        net_rng_(draws::NetworkRng(seed)) {
    core_.AddObserver(this);
    for (auto& c : sc_.workload.classes) total_weight_ += c.weight;
  }

  SimResult Run() {
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
        if (sc_.heartbeats)
          for (auto& x : execs_)
            if (!x.crashed && x.id) core_.ExecutorSeen(x.id);
        core_.Tick();
        Drain();
        if (core_.LiveAttempts() > 0 || pending_ > 0) last_activity = e.t;
        if (e.t - last_activity > idle_limit) {
          TC_LOG(Warn) << "simulation stalled at t=" << e.t << " s with " << core_.RunningJobs()
                       << " jobs unfinished; stopping";
          break;
        }
        Push(Ev::kTick, e.t + core_.PolicyInterval(), 0);
        continue;
      }
      if (e.type == Ev::kWakeUp) {
        if (e.t == wake_at_) wake_at_ = -1;
        if (!Done()) Drain();  // delivered at exactly the asked time
        continue;
      }
      --pending_;
      last_activity = e.t;
      Handle(e);
      Drain();
    }
    parts::FinishRun(&result_, clock_.Now(), core_.RunningJobs(), wall0);
    return std::move(result_);
  }

  // --------------------------------------------------------- observer --
  void OnAttemptEnded(const AttemptRecord& r) override { parts::RecordAttempt(&result_, r); }
  void OnJobFinished(const JobStatusInfo& j) override {
    parts::RecordJob(&result_, j);
    jobs_.erase(j.id);
    if (sc_.workload.arrival == WorkloadModel::Arrival::kClosed && MoreToSubmit())
      Push(Ev::kArrival, clock_.Now() + sc_.workload.think_s, 0);
  }

 private:
  // ------------------------------------------------------------ setup --
  void Setup() {
    const ClusterModel& cl = sc_.cluster;
    execs_.resize(cl.executors);
    const std::vector<double> speeds = draws::Speeds(cl, seed_);
    for (uint32_t i = 0; i < cl.executors; ++i) {
      ExecutorDesc d;
      d.name = "sim" + std::to_string(i);
      d.host = "sim";
      d.slots = cl.slots;
      d.kernels = {kSimKernel};  // executors list what they run; modelled ones run the modelled kernel
      SimExec& x = execs_[i];
      x.speed = speeds[i];
      x.id = core_.AddExecutor(d);
      index_[x.id] = i;
    }
    for (auto& f : cl.fail_slow) {
      Push(Ev::kSlow, f.at_s, f.executor, f.factor);
      if (f.duration_s > 0) Push(Ev::kSlow, f.at_s + f.duration_s, f.executor, 1.0);
    }
    for (auto& c : cl.crashes) Push(Ev::kCrash, c.at_s, c.executor, c.detect_s);
    const WorkloadModel& w = sc_.workload;
    switch (w.arrival) {
      case WorkloadModel::Arrival::kPoisson:
        Push(Ev::kArrival, workload_rng_.Exp(1.0 / w.rate), 0);
        break;
      case WorkloadModel::Arrival::kClosed:
        for (uint32_t i = 0; i < w.outstanding && i < std::max<uint64_t>(w.jobs, 1); ++i) Push(Ev::kArrival, 0, 0);
        break;
      case WorkloadModel::Arrival::kTrace:
        if (!sc_.trace.empty()) Push(Ev::kArrival, sc_.trace[0].submit, 0);
        break;
    }
    PushRaw(Ev::kTick, 0, 0, 0, 0);
  }

  bool MoreToSubmit() const {
    const WorkloadModel& w = sc_.workload;
    if (w.arrival == WorkloadModel::Arrival::kTrace && next_trace_ >= sc_.trace.size()) return false;
    if (w.tasks > 0) return result_.tasks < w.tasks;
    return submitted_ < w.jobs;
  }
  bool Done() const { return !MoreToSubmit() && pending_arrivals_ == 0 && core_.RunningJobs() == 0; }

  // ----------------------------------------------------------- events --
  void PushRaw(Ev type, double t, uint64_t a, double x, uint32_t gen) {
    pq_.push(Event{t, seq_++, a, x, gen, type});
  }
  void Push(Ev type, double t, uint64_t a, double x = 0, uint32_t gen = 0) {
    if (type == Ev::kArrival) ++pending_arrivals_;
    ++pending_;
    PushRaw(type, t, a, x, gen);
  }

  void Handle(const Event& e) {
    switch (e.type) {
      case Ev::kArrival: --pending_arrivals_; Arrive(); break;
      case Ev::kReceive: Receive(e.a); break;
      case Ev::kCancel: CancelAtExecutor(e.a); break;
      case Ev::kFinish: Finish(e.a, e.gen); break;
      case Ev::kResult: core_.AttemptSucceeded(e.a, std::string(), e.x); break;
      case Ev::kFailed: ++result_.failed_attempts; core_.AttemptFailed(e.a, kFailError, e.x); break;
      case Ev::kDropped: ++result_.dropped; core_.AttemptDropped(e.a, kDropWhy); break;
      case Ev::kProgress: Progress(e.a, e.gen); break;
      case Ev::kSlow: SetFactor(static_cast<uint32_t>(e.a), e.x); break;
      case Ev::kCrash: Crash(static_cast<uint32_t>(e.a), e.x); break;
      case Ev::kDetect: core_.RemoveExecutor(execs_[e.a].id, true, "crashed (simulated)"); break;
      case Ev::kTick:
      case Ev::kWakeUp: break;
    }
  }

  void Arrive() {
    if (!MoreToSubmit()) return;
    const WorkloadModel& w = sc_.workload;
    JobDef def;
    JobInfo info;
    if (w.arrival == WorkloadModel::Arrival::kTrace) {
      size_t i = next_trace_++;
      const TraceJob& tj = sc_.trace[i];
      info.trace = static_cast<int64_t>(i);
      def.name = "trace" + std::to_string(i);
      for (const TraceTask& t : tj.tasks) {
        TaskDef d;
        d.kernel = kSimKernel;
        d.task_class = t.task_class;
        d.input_size = t.input_size;
        def.tasks.push_back(std::move(d));
      }
      if (next_trace_ < sc_.trace.size()) Push(Ev::kArrival, std::max(clock_.Now(), sc_.trace[next_trace_].submit), 0);
    } else {
      // Class by weight, then fan-out; both from the workload stream only,
      // so every policy sees the same sequence of jobs.
      const draws::JobDraw jd = draws::DrawJob(w, total_weight_, workload_rng_);
      const JobClass& c = w.classes[jd.cls];
      info.cls = jd.cls;
      def = parts::ClassJob(c, jd.tasks, kSimKernel);
      if (c.divisible) def.divisible_units = uint64_t{jd.tasks} * kSimUnitsPerTask;
      if (w.arrival == WorkloadModel::Arrival::kPoisson)
        Push(Ev::kArrival, clock_.Now() + workload_rng_.Exp(1.0 / w.rate), 0);
    }
    uint32_t n = def.TaskCount();
    info.launches.assign(n, 0);
    ++submitted_;
    result_.tasks += n;
    auto id = core_.SubmitJob(std::move(def));
    if (!id.ok()) {
      TC_LOG(Warn) << "job rejected: " << id.status().message();
      ++result_.failed;
      ++result_.jobs;
      if (w.arrival == WorkloadModel::Arrival::kClosed && MoreToSubmit()) Push(Ev::kArrival, clock_.Now(), 0);
      return;
    }
    if (*id > result_.latencies.size()) result_.latencies.resize(*id, std::nan(""));
    jobs_.emplace(*id, std::move(info));
  }

  double NetDelay() { return sc_.cluster.network.Sample(net_rng_); }

  // A divisible job's task draws its time for an equal share; its work is
  // scaled to the share the scheduler gave it.
  static double ShareOfWork(const LaunchCmd& l, const JobInfo& info) {
    if (!l.share.divisible()) return 1.0;
    return static_cast<double>(l.share.count) * static_cast<double>(info.launches.size()) /
           static_cast<double>(l.share.total);
  }

  // Service time of the n-th attempt of (job, task) at factor 1 and speed 1:
  // counter-based, so it does not depend on what else the policy launched.
  double BaseWork(JobId job, TaskIndex task, const JobInfo& info, uint32_t n, uint32_t exec) {
    if (info.trace >= 0) {
      const TraceTask& t = sc_.trace[static_cast<size_t>(info.trace)].tasks[task];
      return exec == t.executor % execs_.size() ? t.duration : t.normal;
    }
    return sc_.workload.classes[info.cls].task_time.SampleBits(draws::TaskBits(seed_, job, task, n));
  }

  void Drain() {
    for (;;) {
      cmds_.clear();
      core_.TakeCommands(&cmds_);
      if (cmds_.empty()) return ArmWakeUp();
      for (Command& c : cmds_) {
        if (auto* l = std::get_if<LaunchCmd>(&c)) {
          OnLaunch(*l);
        } else if (auto* x = std::get_if<CancelCmd>(&c)) {
          double d = NetDelay();
          if (d <= 0) CancelAtExecutor(x->attempt);
          else Push(Ev::kCancel, clock_.Now() + d, x->attempt);
        }
        // TaskCommitted / JobFinished / ExecutorChanged: seen via the observer.
      }
    }
  }

  // One queued kWakeUp at the core's earliest pending wake-up: a new one
  // only when that is earlier than the one already queued.
  void ArmWakeUp() {
    double t = core_.NextWakeUp();
    if (t < 0) return;
    t = std::max(t, clock_.Now());
    if (wake_at_ >= 0 && wake_at_ <= t) return;
    wake_at_ = t;
    PushRaw(Ev::kWakeUp, t, 0, 0, 0);
  }

  // Whether the n-th attempt of (job, task) fails or is dropped, and where:
  // counter-based like BaseWork, and drawn only when fail_prob / drop_prob
  // are set, so other runs keep every draw.
  void DrawEnd(JobId job, TaskIndex task, const JobInfo& info, uint32_t n, SimAttempt* a) {
    const double fail_p = sc_.workload.classes[info.cls].fail_prob, drop_p = sc_.cluster.drop_prob;
    if (fail_p <= 0 && drop_p <= 0) return;
    uint64_t bits = Mix(seed_ ^ 0x6661696cULL ^ Mix(job * 0xbf58476d1ce4e5b9ULL ^ Mix(task + (uint64_t{n} << 32))));
    double u = ToUnit(Mix(bits));
    if (u < fail_p) a->end = AEnd::kFail;
    else if (u < fail_p + drop_p) a->end = AEnd::kDrop;
    else return;
    a->span = a->total * ToUnit(Mix(bits ^ 0x5bd1e995ULL));  // partway, uniformly
  }

  void OnLaunch(const LaunchCmd& l) {
    ++result_.attempts;
    if (l.copy) ++result_.copies;
    auto ji = jobs_.find(l.job);
    auto xi = index_.find(l.executor);
    if (ji == jobs_.end() || xi == index_.end()) return;  // cannot happen; be safe
    uint32_t n = ji->second.launches[l.task]++;
    SimAttempt a;
    a.exec = xi->second;
    a.total = a.span = BaseWork(l.job, l.task, ji->second, n, a.exec) * execs_[a.exec].speed * ShareOfWork(l, ji->second);
    DrawEnd(l.job, l.task, ji->second, n, &a);
    a.work = a.span;
    attempts_.emplace(l.attempt, a);
    double d = NetDelay();
    if (d <= 0) Receive(l.attempt);
    else Push(Ev::kReceive, clock_.Now() + d, l.attempt);
  }

  void Receive(AttemptId id) {
    auto it = attempts_.find(id);
    if (it == attempts_.end()) return;  // cancelled before it arrived
    SimExec& x = execs_[it->second.exec];
    if (x.crashed) {
      attempts_.erase(it);
      return;
    }
    if (x.running.size() < sc_.cluster.slots) {
      Start(id, it->second);
    } else {
      it->second.state = AState::kQueued;
      x.queue.push_back(id);
    }
  }

  void Start(AttemptId id, SimAttempt& a) {
    SimExec& x = execs_[a.exec];
    double now = clock_.Now();
    a.state = AState::kRunning;
    a.start = now;
    a.last_update = now;
    x.running.push_back(id);
    Push(Ev::kFinish, now + a.work * x.factor, id, 0, ++a.gen);
    PushProgress(id, a, x.factor);
    core_.AttemptStarted(id);
  }

  // The next progress report of a running attempt, if it comes before the
  // attempt ends; `a.work` must be up to date at now (a.last_update).
  void PushProgress(AttemptId id, const SimAttempt& a, double factor) {
    const uint32_t n = sc_.cluster.progress_reports;
    if (a.reports >= n || a.total <= 0) return;
    double target = a.total * (a.reports + 1) / (n + 1);  // work done at the next report
    double left = target - (a.span - a.work);             // still to do until then
    if (target >= a.span) return;                         // it ends first
    Push(Ev::kProgress, a.last_update + std::max(0.0, left) * factor, id, 0, a.gen);
  }

  void Progress(AttemptId id, uint32_t gen) {
    auto it = attempts_.find(id);
    if (it == attempts_.end() || it->second.gen != gen || it->second.state != AState::kRunning) return;
    SimAttempt& a = it->second;
    const uint32_t n = sc_.cluster.progress_reports;
    ++a.reports;
    ++result_.progress;
    core_.AttemptProgress(id, static_cast<float>(a.reports) / static_cast<float>(n + 1));
    // Bring `work` up to date so the next report is timed from now.
    SimExec& x = execs_[a.exec];
    double now = clock_.Now();
    a.work = std::max(0.0, a.work - (now - a.last_update) / x.factor);
    a.last_update = now;
    PushProgress(id, a, x.factor);
  }

  void StartNext(SimExec& x) {
    while (x.running.size() < sc_.cluster.slots && !x.queue.empty()) {
      AttemptId id = x.queue.front();
      x.queue.pop_front();
      auto it = attempts_.find(id);
      if (it != attempts_.end()) Start(id, it->second);
    }
  }

  void Finish(AttemptId id, uint32_t gen) {
    auto it = attempts_.find(id);
    if (it == attempts_.end() || it->second.gen != gen || it->second.state != AState::kRunning) return;
    double now = clock_.Now();
    double run = now - it->second.start;
    result_.machine_s += run;
    SimExec& x = execs_[it->second.exec];
    const AEnd end = it->second.end;
    parts::RemoveFrom(x.running, id);
    attempts_.erase(it);
    StartNext(x);
    double d = NetDelay();
    Ev ev = end == AEnd::kFail ? Ev::kFailed : end == AEnd::kDrop ? Ev::kDropped : Ev::kResult;
    if (d > 0) Push(ev, now + d, id, run);
    else Handle(Event{now, 0, id, run, 0, ev});
  }

  void CancelAtExecutor(AttemptId id) {
    auto it = attempts_.find(id);
    if (it == attempts_.end()) return;  // already finished, or vanished
    SimExec& x = execs_[it->second.exec];
    if (it->second.state == AState::kRunning) {
      result_.machine_s += clock_.Now() - it->second.start;
      parts::RemoveFrom(x.running, id);
      attempts_.erase(it);
      StartNext(x);
      return;
    }
    if (it->second.state == AState::kQueued) {
      auto q = std::find(x.queue.begin(), x.queue.end(), id);
      if (q != x.queue.end()) x.queue.erase(q);
    }
    attempts_.erase(it);
  }

  // Fail-slow onset or end: running attempts keep the work already done and
  // run the rest at the new factor.
  void SetFactor(uint32_t i, double f) {
    SimExec& x = execs_[i];
    double now = clock_.Now();
    for (AttemptId id : x.running) {
      SimAttempt& a = attempts_.at(id);
      a.work = std::max(0.0, a.work - (now - a.last_update) / x.factor);
      a.last_update = now;
      Push(Ev::kFinish, now + a.work * f, id, 0, ++a.gen);
      PushProgress(id, a, f);
    }
    x.factor = f;
  }

  void Crash(uint32_t i, double detect_s) {
    SimExec& x = execs_[i];
    if (x.crashed) return;
    x.crashed = true;
    double now = clock_.Now();
    for (AttemptId id : x.running) {
      auto it = attempts_.find(id);
      if (it == attempts_.end()) continue;
      result_.machine_s += now - it->second.start;
      attempts_.erase(it);
    }
    for (AttemptId id : x.queue) attempts_.erase(id);
    x.running.clear();
    x.queue.clear();
    // With heartbeats the core notices on its own (lost_after_s).
    if (!sc_.heartbeats) Push(Ev::kDetect, now + detect_s, i);
  }

  const Scenario& sc_;
  uint64_t seed_;
  FakeClock clock_;
  SchedulerCore core_;
  Rng workload_rng_, net_rng_;
  double total_weight_ = 0;

  std::priority_queue<Event, std::vector<Event>, Later> pq_;
  uint64_t seq_ = 0;
  double wake_at_ = -1;  // time of the queued kWakeUp, -1 when none
  uint64_t pending_ = 0;           // queued events other than ticks
  uint64_t pending_arrivals_ = 0;
  std::vector<SimExec> execs_;
  std::unordered_map<ExecutorId, uint32_t> index_;
  std::unordered_map<AttemptId, SimAttempt> attempts_;
  std::unordered_map<JobId, JobInfo> jobs_;
  std::vector<Command> cmds_;
  uint64_t submitted_ = 0;
  size_t next_trace_ = 0;
  SimResult result_;
};

Simulator::Simulator(const Scenario& scenario, PolicyChain policies, uint64_t seed)
    : impl_(new Impl(scenario, std::move(policies), seed)) {}
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
  if (scenario.cluster.edges.count > 0) {  // two tiers: every edge runs the same chain (two_tier.h)
    if (Status s = CheckTwoTier(scenario); !s.ok()) return s;
    std::vector<PolicyChain> edge_chains;
    for (uint32_t e = 0; e < scenario.cluster.edges.count; ++e) {
      auto chain = MakePolicyEntry(entry, scenario.config);
      if (!chain.ok()) return chain.status();
      edge_chains.push_back(std::move(chain).value());
    }
    SimResult r = RunTwoTier(scenario, std::move(policies).value(), std::move(edge_chains), seed);
    r.policy = entry;
    return r;
  }
  Simulator sim(scenario, std::move(policies).value(), seed);
  SimResult r = sim.Run();
  r.policy = entry;
  return r;
}

}  // namespace tailcut::sim
