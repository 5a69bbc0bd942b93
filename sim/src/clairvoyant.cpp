// The clairvoyant bound: a list-scheduling replay of a scenario's workload
// that knows stragglers, speeds, fail-slow onsets and crashes in advance.
#include "tailcut/sim/clairvoyant.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <cmath>
#include <deque>
#include <limits>
#include <queue>
#include <set>
#include <unordered_map>
#include <utility>

#include "arrivals.h"
#include "draws.h"

namespace tailcut::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Exec {
  double speed = 1;
  std::vector<std::pair<double, double>> changes;  // (time, factor from then on), by time
  double crash_at = kInf;
  uint32_t free = 0;
  bool crashed = false;
  bool faulty = false;  // turns fail-slow or crashes at some point
};

// When `work` (run time at factor 1, speed included) started at `t` ends on
// x, through its fail-slow changes, as the simulator stretches a running
// attempt.
double FinishAt(const Exec& x, double t, double work) {
  double f = 1;
  size_t i = 0;
  while (i < x.changes.size() && x.changes[i].first <= t) f = x.changes[i++].second;
  for (; i < x.changes.size(); ++i) {
    const double seg = x.changes[i].first - t;
    if (f <= 0 || work * f <= seg) break;
    work -= seg / f;
    t = x.changes[i].first;
    f = x.changes[i].second;
  }
  return t + work * std::max(f, 0.0);
}

enum class Ev : uint8_t { kCrash, kArrive, kReady, kEnd, kCommit, kDeadline };
struct OracleEvent {
  double t;
  uint64_t seq;
  uint64_t b;   // kEnd: run id
  uint32_t a;   // executor or job index
  Ev type;
};
struct OracleLater {
  bool operator()(const OracleEvent& l, const OracleEvent& r) const { return l.t != r.t ? l.t > r.t : l.seq > r.seq; }
};

struct OracleJob {
  double submit = 0;
  uint32_t cls = 0;
  int64_t trace = -1;
  uint32_t need = 0, min_count = 0, commits = 0;
  uint32_t next = 0;              // its next task to start
  bool ended = false;
  bool cancels = false;           // may end before all its tasks (k of n, quorum)
  std::vector<uint64_t> running;  // run ids; kept only for jobs that end before all their tasks
};
struct Running {
  uint32_t exec;
  double start;
  std::multiset<std::pair<double, uint32_t>>::iterator release;
};

class Replay {
 public:
  Replay(const Scenario& sc, const BoundOptions& o, bool fifo)
      : sc_(sc), o_(o), fifo_(fifo), net_(sc.cluster.network.Min()), arrivals_(sc, o.seed, o.arrivals) {}

  SimResult Run() {
    const auto wall0 = std::chrono::steady_clock::now();
    Setup();
    while (!pq_.empty()) {
      OracleEvent e = pq_.top();
      pq_.pop();
      if (e.t > sc_.max_time_s) break;
      now_ = e.t;
      ++r_.events;
      Handle(e);
      Place();
    }
    r_.virtual_s = now_;
    for (const OracleJob& j : jobs_) r_.unfinished += j.ended ? 0 : 1;
    Summarise(&r_);
    r_.policy = "bound";
    r_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    return std::move(r_);
  }

 private:
  void Push(Ev type, double t, uint32_t a, uint64_t b = 0) { pq_.push(OracleEvent{t, seq_++, b, a, type}); }

  void Setup() {
    const ClusterModel& cl = sc_.cluster;
    const std::vector<double> speeds = draws::Speeds(cl, o_.seed);
    execs_.resize(cl.executors);
    for (uint32_t i = 0; i < cl.executors; ++i) execs_[i].speed = speeds[i];
    // Each executor's factor over time, in the order the simulator applies
    // the changes (time, then listing order); known in advance.
    std::vector<std::pair<double, std::pair<uint32_t, double>>> changes;
    for (const FailSlowFault& f : cl.fail_slow) {
      if (f.executor >= execs_.size()) continue;
      changes.push_back({f.at_s, {f.executor, f.factor}});
      if (f.duration_s > 0) changes.push_back({f.at_s + f.duration_s, {f.executor, 1.0}});
    }
    std::stable_sort(changes.begin(), changes.end(), [](auto& l, auto& r) { return l.first < r.first; });
    for (auto& [t, c] : changes) execs_[c.first].changes.emplace_back(t, c.second);
    for (const CrashFault& c : cl.crashes)
      if (c.executor < execs_.size() && c.at_s < execs_[c.executor].crash_at) {
        execs_[c.executor].crash_at = c.at_s;
        Push(Ev::kCrash, c.at_s, c.executor);
      }
    for (uint32_t i = 0; i < execs_.size(); ++i) {
      Exec& x = execs_[i];
      x.free = cl.slots;
      x.faulty = !x.changes.empty() || x.crash_at < kInf;
      if (x.faulty) faulty_.push_back(i);
      else if (cl.slots > 0) free_.emplace(x.speed, i);
    }
    for (double t : arrivals_.Initial()) Push(Ev::kArrive, t, 0);
  }

  bool MoreToSubmit() const { return arrivals_.More(jobs_.size(), r_.tasks); }

  void Handle(const OracleEvent& e) {
    switch (e.type) {
      case Ev::kCrash: Crash(e.a); break;
      case Ev::kArrive: Arrive(); break;
      case Ev::kReady: {
        runnable_.push_back(e.a);
        break;
      }
      case Ev::kEnd: End(e.b); break;
      case Ev::kCommit: Commit(e.a); break;
      case Ev::kDeadline: {
        OracleJob& j = jobs_[e.a];
        if (!j.ended) EndJob(e.a, j.commits >= std::max<uint32_t>(j.min_count, 1));
        break;
      }
    }
  }

  // The same job sequence as the simulator's Arrive (same draws, same order).
  void Arrive() {
    if (!MoreToSubmit()) return;
    OracleJob j;
    j.submit = now_;
    uint32_t n = 0;
    CompletionKind rule = CompletionKind::kAll;
    const Arrivals::Next next = arrivals_.Take(now_);
    if (next.trace >= 0) {
      j.trace = next.trace;
      n = static_cast<uint32_t>(sc_.trace[static_cast<size_t>(next.trace)].tasks.size());
    } else {
      const draws::JobDraw d = next.draw;
      const JobClass& c = sc_.workload.classes[d.cls];
      j.cls = d.cls;
      n = d.tasks;
      rule = c.rule;
      j.cancels = rule != CompletionKind::kAll;
      if (rule != CompletionKind::kAll && c.k > 0) j.need = std::min(c.k, n);
      if (rule == CompletionKind::kQuorum) {
        j.min_count = std::min(c.min_count, j.need ? j.need : n);
        if (c.deadline_s > 0) Push(Ev::kDeadline, now_ + c.deadline_s, static_cast<uint32_t>(jobs_.size()));
      }
    }
    if (next.then >= 0) Push(Ev::kArrive, next.then, 0);
    if (j.need == 0) j.need = n;
    if (rule == CompletionKind::kAll) j.need = n;
    const auto idx = static_cast<uint32_t>(jobs_.size());
    jobs_.push_back(std::move(j));
    tasks_of_.push_back(n);
    r_.tasks += n;
    r_.latencies.push_back(std::nan(""));
    Push(Ev::kReady, now_ + net_, idx);  // the launch travels before any task can start
  }

  // Run time at factor 1 and speed 1: the first attempt's draw, unstraggled;
  // a trace task's time on a healthy executor.
  double BaseWork(uint32_t job, uint32_t task) const {
    const OracleJob& j = jobs_[job];
    if (j.trace >= 0) {
      const TraceTask& t = sc_.trace[static_cast<size_t>(j.trace)].tasks[task];
      return t.normal > 0 ? std::min(t.duration, t.normal) : t.duration;
    }
    return sc_.workload.classes[j.cls].task_time.SampleBitsUnstraggled(draws::TaskBits(o_.seed, job + 1ULL, task, 0));
  }

  // The free slot where a task of `base` run time finishes first, and when;
  // UINT32_MAX if none finishes before its executor crashes. Healthy
  // executors are ordered by speed; the few faulty ones are looked at each.
  std::pair<uint32_t, double> BestFree(double base) const {
    uint32_t best = UINT32_MAX;
    double fin = kInf;
    if (!free_.empty()) {
      best = free_.begin()->second;
      fin = now_ + base * free_.begin()->first;
    }
    for (uint32_t e : faulty_) {
      const Exec& x = execs_[e];
      if (x.crashed || x.free == 0) continue;
      const double f = FinishAt(x, now_, base * x.speed);
      if (f <= x.crash_at && f < fin) best = e, fin = f;
    }
    return {best, fin};
  }

  // Places queued tasks in the replay's order: the core's (Pump: runnable
  // jobs round-robin, up to kQuantum tasks each per visit) or first come
  // first served; within a job, in task order. Each task goes onto the free
  // slot where it finishes first, or is held back when a busy healthy slot
  // frees in time to finish it earlier, and claims that slot (which frees
  // again when the task would end there, for the tasks behind it): a slow
  // executor only gets work it finishes first. The look-ahead stops after a
  // few rounds of the fleet's slots.
  void Place() {
    constexpr uint32_t kQuantum = 64;  // as the core's Pump
    Claims c;
    const size_t look_ahead = 4 * execs_.size() * sc_.cluster.slots + 64;
    size_t visits = 0;
    if (fifo_) {
      for (size_t k = 0; k < runnable_.size() && visits++ < look_ahead;) {
        const uint32_t job = runnable_[k];
        const bool no_slot = !jobs_[job].ended && PlaceTasks(job, UINT32_MAX, &c).second;
        if (jobs_[job].ended || jobs_[job].next == tasks_of_[job]) runnable_.erase(runnable_.begin() + static_cast<std::ptrdiff_t>(k));
        else ++k;
        if (no_slot && free_.empty()) break;
      }
      return;
    }
    size_t idle_visits = 0;
    while (!runnable_.empty() && idle_visits < runnable_.size() && visits++ < look_ahead) {
      const uint32_t job = runnable_.front();
      runnable_.pop_front();
      if (jobs_[job].ended) continue;
      const auto [placed, no_slot] = PlaceTasks(job, kQuantum, &c);
      if (jobs_[job].next < tasks_of_[job]) runnable_.push_back(job);
      idle_visits = placed == 0 ? idle_visits + 1 : 0;
      if (no_slot && free_.empty()) break;  // no healthy slot anywhere (faulty ones were looked at)
    }
  }

  // Slot releases one Place pass has promised to held-back tasks.
  using Release = std::pair<double, uint32_t>;
  struct Claims {
    bool any = false;  // a release of a running task has been claimed: the last one is `last`
    Release last{};
    std::priority_queue<Release, std::vector<Release>, std::greater<>> claimed;  // when claimed slots free again
  };

  // Starts up to `quantum` of the job's next tasks; returns how many, and
  // whether it stopped for want of any free slot.
  std::pair<uint32_t, bool> PlaceTasks(uint32_t job, uint32_t quantum, Claims* c) {
    OracleJob& j = jobs_[job];
    uint32_t placed = 0;
    while (placed < quantum && j.next < tasks_of_[job]) {
      const double base = BaseWork(job, j.next);
      const auto [best, fin] = BestFree(base);
      if (best == UINT32_MAX) return {placed, true};
      // Claims take releases in time order; tasks started in this pass add
      // theirs to releases_, so look the next one up each time.
      const auto rel = c->any ? releases_.upper_bound(c->last) : releases_.begin();
      // A job that needs only k of its tasks is not held back: its slow
      // tasks just do not count, and waiting would take fast slots from
      // the tasks that do.
      const bool from_claimed = !c->claimed.empty() && (rel == releases_.end() || c->claimed.top() < *rel);
      if (!j.cancels && (from_claimed || rel != releases_.end())) {
        const Release next = from_claimed ? c->claimed.top() : *rel;
        const Exec& y = execs_[next.second];
        const double alt = FinishAt(y, next.first, base * y.speed);
        if (alt < fin && alt <= y.crash_at) {
          if (from_claimed) {
            c->claimed.pop();
          } else {
            c->any = true;
            c->last = *rel;
          }
          c->claimed.emplace(alt, next.second);
          return {placed, false};
        }
      }
      Start(job, best, fin);
      ++j.next;
      ++placed;
    }
    return {placed, false};
  }

  void Start(uint32_t job, uint32_t e, double fin) {
    Exec& x = execs_[e];
    if (--x.free == 0 && !x.faulty) free_.erase({x.speed, e});
    const uint64_t id = next_run_++;
    // Only healthy slots are waited for (a faulty one seldom frees in time).
    runs_.emplace(id, Running{e, now_, x.faulty ? releases_.end() : releases_.emplace(fin, e)});
    run_job_.emplace(id, job);
    OracleJob& j = jobs_[job];
    if (j.cancels) j.running.push_back(id);
    ++r_.attempts;
    Push(Ev::kEnd, fin, e, id);
  }

  // Frees the slot of run `id` and counts its machine time.
  void Stop(uint64_t id) {
    auto it = runs_.find(id);
    if (it == runs_.end()) return;
    r_.machine_s += now_ - it->second.start;
    if (it->second.release != releases_.end()) releases_.erase(it->second.release);
    Exec& x = execs_[it->second.exec];
    const uint32_t e = it->second.exec;
    runs_.erase(it);
    if (!x.crashed && x.free++ == 0 && !x.faulty) free_.emplace(x.speed, e);
  }

  void End(uint64_t id) {
    auto jt = run_job_.find(id);
    if (jt == run_job_.end()) return;  // cancelled with its job
    const uint32_t job = jt->second;
    run_job_.erase(jt);
    r_.committed_s += now_ - runs_.at(id).start;
    Stop(id);
    ++r_.committed;
    if (net_ > 0) Push(Ev::kCommit, now_ + net_, job);
    else Commit(job);
  }

  void Commit(uint32_t job) {
    OracleJob& j = jobs_[job];
    if (j.ended) return;
    if (++j.commits >= j.need) EndJob(job, true);
  }

  void EndJob(uint32_t job, bool ok) {
    OracleJob& j = jobs_[job];
    j.ended = true;
    r_.latencies[job] = now_ - j.submit;
    ++r_.jobs;
    if (!ok) ++r_.failed;
    for (uint64_t id : j.running) {
      run_job_.erase(id);
      Stop(id);  // the rest of a k-of-n job is cancelled at once
    }
    j.running.clear();
    if (double t = arrivals_.AfterEnd(now_, false, jobs_.size(), r_.tasks); t >= 0) Push(Ev::kArrive, t, 0);
  }

  void Crash(uint32_t e) {
    Exec& x = execs_[e];
    x.crashed = true;
    x.free = 0;
  }

  const Scenario& sc_;
  BoundOptions o_;
  bool fifo_;  // first come first served, else the core's round-robin
  double net_;
  Arrivals arrivals_;
  double now_ = 0;
  std::priority_queue<OracleEvent, std::vector<OracleEvent>, OracleLater> pq_;
  uint64_t seq_ = 0;
  std::vector<Exec> execs_;
  std::set<std::pair<double, uint32_t>> free_;                // (speed, executor): healthy ones with a free slot
  std::vector<uint32_t> faulty_;                              // executors that turn fail-slow or crash
  std::multiset<std::pair<double, uint32_t>> releases_;       // (end, executor) of tasks on healthy executors
  std::deque<uint32_t> runnable_;  // jobs with unstarted tasks, in the core's round-robin order
  std::vector<OracleJob> jobs_;
  std::vector<uint32_t> tasks_of_;
  std::unordered_map<uint64_t, Running> runs_;
  std::unordered_map<uint64_t, uint32_t> run_job_;
  uint64_t next_run_ = 0;
  SimResult r_;
};

}  // namespace

SimResult ClairvoyantBound(const Scenario& scenario, const BoundOptions& options) {
  // Neither order is best for every quantile (round-robin lets small jobs
  // past big ones; FIFO finishes each job as early as it can), so each
  // statistic is the lower of the two; latencies are the core order's.
  SimResult rr = Replay(scenario, options, false).Run();
  const SimResult fifo = Replay(scenario, options, true).Run();
  for (auto [a, b] : {std::pair{&rr.mean, fifo.mean}, {&rr.p50, fifo.p50}, {&rr.p90, fifo.p90}, {&rr.p99, fifo.p99},
                      {&rr.p999, fifo.p999}, {&rr.machine_s, fifo.machine_s}})
    *a = std::min(*a, b);
  rr.wall_s += fifo.wall_s;
  rr.events += fifo.events;
  return rr;
}

}  // namespace tailcut::sim
