#include "tailcut/sim/scenario.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "tailcut/policies/registry.h"
#include "tailcut/policies/scheduling_config.h"
#include "tailcut/predictors/trace.h"

namespace tailcut::sim {
namespace {

// A memory amount in MiB: an integer in [0, 2^40], as the wire takes it.
Status LoadMemoryMb(const Config& cfg, const std::string& key, uint64_t* out) {
  int64_t mb = static_cast<int64_t>(*out);
  if (Status s = cfg.Get(key, &mb); !s.ok()) return s;
  if (mb < 0 || static_cast<uint64_t>(mb) > kMaxMemoryMb)
    return Status::InvalidArgument(key + " must be in [0, 2^40] MiB, got " + std::to_string(mb));
  *out = static_cast<uint64_t>(mb);
  return Status::Ok();
}

Status LoadClass(const Config& cfg, const std::string& p, JobClass* c) {
  std::string rule = "all";
  if (Status s = TableReader(cfg, p)
          .Get("name", &c->name)
          .Get("weight", &c->weight)
          .Get("rule", &rule)
          .Get("k", &c->k)
          .Get("overselect", &c->overselect)
          .Get("min_count", &c->min_count)
          .Get("deadline_s", &c->deadline_s)
          .Get("fail_prob", &c->fail_prob)
          .Get("divisible", &c->divisible)
          .status();
      !s.ok())
    return s;
  if (Status s = cfg.Get(p + "gpus", &c->gpus); !s.ok()) return s;
  if (Status s = LoadMemoryMb(cfg, p + "memory_mb", &c->memory_mb); !s.ok()) return s;
  c->tasks_set = cfg.Has(p + "tasks");
  if (Status s = LoadDistribution(cfg, p + "tasks", &c->tasks); !s.ok()) return s;
  if (Status s = LoadDistribution(cfg, p + "task_time", &c->task_time); !s.ok()) return s;
  if (rule == "all") c->rule = CompletionKind::kAll;
  else if (rule == "k_of_n") c->rule = CompletionKind::kKOfN;
  else if (rule == "quorum") c->rule = CompletionKind::kQuorum;
  else return Status::InvalidArgument(p + "rule = '" + rule + "': want all, k_of_n or quorum");
  if (c->weight < 0) return Status::InvalidArgument(p + "weight must be >= 0");
  if (c->fail_prob < 0 || c->fail_prob > 1) return Status::InvalidArgument(p + "fail_prob must be in [0, 1]");
  if (c->divisible && c->rule != CompletionKind::kAll)
    return Status::InvalidArgument(p + "divisible needs rule = all (every share is part of the work)");
  if (c->rule != CompletionKind::kAll && c->k == 0)
    return Status::InvalidArgument(p + "k must be >= 1 for rule " + rule);
  if (c->rule == CompletionKind::kQuorum && !c->tasks_set)
    c->tasks = Distribution::Constant(std::ceil(c->k * (1 + c->overselect) - 1e-9));
  return Status::Ok();
}

std::string DirOf(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

StatusOr<Scenario> LoadScenario(const std::string& path, const std::vector<std::string>& overrides) {
  auto cfg = Config::LoadFile(path);
  if (!cfg.ok()) return cfg.status();
  for (const std::string& o : overrides)
    if (Status s = cfg->Override(o); !s.ok()) return s;
  auto sc = ParseScenario(std::move(cfg).value(), DirOf(path));
  if (sc.ok()) sc->origin = path;
  return sc;
}

StatusOr<Scenario> ParseScenario(Config cfg, const std::string& base_dir) {
  Scenario sc;
  sc.origin = cfg.origin();
  int64_t seed = 1;
  if (Status s = TableReader(cfg, "")
                     .Get("name", &sc.name)
                     .Get("seed", &seed)
                     .Get("max_time_s", &sc.max_time_s)
                     .Get("tick_s", &sc.tick_s)
                     .status();
      !s.ok())
    return s;
  if (!(sc.tick_s >= 0)) return Status::InvalidArgument("tick_s must be >= 0 (0: the policy interval)");
  sc.seed = static_cast<uint64_t>(seed);

  // [core], [predictor], [policies.*]: the daemon's loader. The simulator
  // sends no heartbeats unless core.lost_after_s > 0.
  SchedulingConfig sched;
  sched.core.lost_after_s = 0;
  sched.core.count_executor_loss = false;  // new in issue #10: results stay as they were
  sched.core.attempt_timeout_ratio = 0;     // new in issue #22: modelled executors always answer
  if (Status s = LoadSchedulingConfig(cfg, &sched); !s.ok()) return s;
  sc.core = sched.core;
  sc.predictor = sched.predictor;
  if (cfg.Has("policies.chain")) {
    sc.chain.clear();
    for (const std::string& p : SplitPolicyList(sched.chain)) sc.chain += (sc.chain.empty() ? "" : "+") + p;
    if (sc.chain.empty()) sc.chain = "none";
  }
  sc.heartbeats = sc.core.lost_after_s > 0;

  // Cluster.
  ClusterModel& cl = sc.cluster;
  if (Status s = TableReader(cfg, "cluster")
          .Get("executors", &cl.executors)
          .Get("slots", &cl.slots)
          .Also(LoadDistribution(cfg, "cluster.speed", &cl.speed))
          .Also(LoadDistribution(cfg, "cluster.network", &cl.network))
          .Get("progress_reports", &cl.progress_reports)
          .Get("drop_prob", &cl.drop_prob)
          .status();
      !s.ok())
    return s;
  if (Status s = cfg.Get("cluster.gpus", &cl.gpus); !s.ok()) return s;
  if (Status s = LoadMemoryMb(cfg, "cluster.memory_mb", &cl.memory_mb); !s.ok()) return s;
  if (cl.drop_prob < 0 || cl.drop_prob > 1) return Status::InvalidArgument("cluster.drop_prob must be in [0, 1]");
  if (cl.progress_reports > 1000) return Status::InvalidArgument("cluster.progress_reports must be <= 1000");
  if (cl.executors == 0 || cl.slots == 0) return Status::InvalidArgument("cluster.executors and cluster.slots must be >= 1");
  if (cfg.Has("cluster.edges")) {
    EdgeTierModel& e = cl.edges;
    if (Status s = TableReader(cfg, "cluster.edges")
            .Get("count", &e.count)
            .Get("executors_per_edge", &e.executors_per_edge)
            .Also(LoadDistribution(cfg, "cluster.edges.link", &e.link))
            .Get("edge_quorum", &e.edge_quorum)
            .status();
        !s.ok())
      return s;
    if (e.count == 0) return Status::InvalidArgument("cluster.edges.count must be >= 1");
    if (e.executors_per_edge == 0) e.executors_per_edge = std::max<uint32_t>(1, cl.executors / e.count);
    if (!(e.edge_quorum >= 0 && e.edge_quorum <= 1))
      return Status::InvalidArgument("cluster.edges.edge_quorum must be in [0, 1] (0 = off)");
    if (uint64_t{e.count} * e.executors_per_edge > 10'000'000)
      return Status::InvalidArgument("cluster.edges: count x executors_per_edge is over 10M devices");
    // The devices are the cluster's executors (speeds, faults, the bound).
    cl.executors = e.count * e.executors_per_edge;
  }
  for (size_t i = 0, n = cfg.ArraySize("cluster.fail_slow"); i < n; ++i) {
    std::string p = "cluster.fail_slow." + std::to_string(i) + ".";
    FailSlowFault f;
    if (Status s = TableReader(cfg, p)
          .Get("executor", &f.executor)
          .Get("at_s", &f.at_s)
          .Get("factor", &f.factor)
          .Get("duration_s", &f.duration_s)
          .status();
        !s.ok())
      return s;
    if (f.executor >= cl.executors) return Status::InvalidArgument(p + "executor is out of range");
    if (f.factor <= 0) return Status::InvalidArgument(p + "factor must be > 0");
    cl.fail_slow.push_back(f);
  }
  for (size_t i = 0, n = cfg.ArraySize("cluster.crash"); i < n; ++i) {
    std::string p = "cluster.crash." + std::to_string(i) + ".";
    CrashFault c;
    if (Status s = TableReader(cfg, p)
          .Get("executor", &c.executor)
          .Get("at_s", &c.at_s)
          .Get("detect_s", &c.detect_s)
          .status();
        !s.ok())
      return s;
    if (c.executor >= cl.executors) return Status::InvalidArgument(p + "executor is out of range");
    cl.crashes.push_back(c);
  }

  // Workload.
  WorkloadModel& w = sc.workload;
  std::string arrival = "poisson", trace_file;
  int64_t jobs = static_cast<int64_t>(w.jobs), tasks = 0;
  if (Status s = TableReader(cfg, "workload")
                     .Get("arrival", &arrival)
                     .Get("rate", &w.rate)
                     .Get("outstanding", &w.outstanding)
                     .Get("think_s", &w.think_s)
                     .Get("jobs", &jobs)
                     .Get("tasks", &tasks)
                     .Get("trace", &trace_file)
                     .Get("owner", &w.owner)
                     .status();
      !s.ok())
    return s;
  if (jobs < 0 || tasks < 0) return Status::InvalidArgument("workload.jobs and workload.tasks must be >= 0");
  w.jobs = static_cast<uint64_t>(jobs);
  w.tasks = static_cast<uint64_t>(tasks);
  if (arrival == "poisson") w.arrival = WorkloadModel::Arrival::kPoisson;
  else if (arrival == "closed") w.arrival = WorkloadModel::Arrival::kClosed;
  else if (arrival == "trace") w.arrival = WorkloadModel::Arrival::kTrace;
  else return Status::InvalidArgument("workload.arrival = '" + arrival + "': want poisson, closed or trace");
  if (w.arrival == WorkloadModel::Arrival::kPoisson && w.rate <= 0)
    return Status::InvalidArgument("workload.rate must be > 0");
  if (w.arrival == WorkloadModel::Arrival::kClosed && w.outstanding == 0)
    return Status::InvalidArgument("workload.outstanding must be >= 1");
  for (size_t i = 0, n = cfg.ArraySize("workload.class"); i < n; ++i) {
    JobClass c;
    if (Status s = LoadClass(cfg, "workload.class." + std::to_string(i) + ".", &c); !s.ok()) return s;
    w.classes.push_back(c);
  }
  if (w.classes.empty()) w.classes.push_back(JobClass{});
  double total_weight = 0;
  for (auto& c : w.classes) total_weight += c.weight;
  if (total_weight <= 0) return Status::InvalidArgument("workload.class weights must not all be 0");
  for (size_t i = 0, n = cfg.ArraySize("workload.stream"); i < n; ++i) {
    const std::string p = "workload.stream." + std::to_string(i) + ".";
    WorkloadModel::Stream st;
    std::string cls, how = "poisson";
    int64_t stream_jobs = static_cast<int64_t>(st.jobs), priority = 0;
    TableReader t(cfg, p);
    t.Get("owner", &st.owner)
        .Get("class", &cls)
        .Get("arrival", &how)
        .Get("rate", &st.rate)
        .Get("outstanding", &st.outstanding)
        .Get("think_s", &st.think_s)
        .Get("jobs", &stream_jobs)
        .Get("priority", &priority)
        .Check(stream_jobs >= 0, "jobs must be >= 0")
        .Check(how == "poisson" || how == "closed", "arrival must be poisson or closed")
        .Check(how != "poisson" || st.rate > 0, "rate must be > 0")
        .Check(how != "closed" || st.outstanding >= 1, "outstanding must be >= 1")
        .Check(st.think_s >= 0, "think_s must be >= 0")
        .Check(priority >= -kMaxJobPriority && priority <= kMaxJobPriority, "priority must be in -1000..1000");
    auto c = std::find_if(w.classes.begin(), w.classes.end(), [&](const JobClass& x) { return x.name == cls; });
    t.Check(c != w.classes.end(), "class '" + cls + "' is not a [[workload.class]] name");
    if (!t.status().ok()) return t.status();
    st.cls = static_cast<uint32_t>(c - w.classes.begin());
    st.arrival = how == "closed" ? WorkloadModel::Arrival::kClosed : WorkloadModel::Arrival::kPoisson;
    st.jobs = static_cast<uint64_t>(stream_jobs);
    st.priority = static_cast<int32_t>(priority);
    w.streams.push_back(st);
  }
  if (w.arrival == WorkloadModel::Arrival::kTrace) {
    if (trace_file.empty()) return Status::InvalidArgument("workload.arrival = 'trace' needs workload.trace = FILE");
    if (trace_file[0] != '/') trace_file = base_dir + "/" + trace_file;
    auto t = LoadTraceCsv(trace_file);
    if (!t.ok()) return t.status();
    sc.trace = std::move(t).value();
    if (!cfg.Has("workload.jobs")) w.jobs = sc.trace.size();
  }

  // Live benchmark keys (reserved).
  LiveModel& l = sc.live;
  bool idempotent = false;
  if (Status s = TableReader(cfg, "live")
          .Get("executors", &l.executors)
          .Get("slots", &l.slots)
          .Get("kernel", &l.kernel)
          .Get("task_ms", &l.task_ms)
          .Get("sigma", &l.sigma)
          .Get("jobs", &l.jobs)
          .Get("tasks_per_job", &l.tasks_per_job)
          .Get("fail_slow_executor", &l.fail_slow_executor)
          .Get("fail_slow_factor", &l.fail_slow_factor)
          .Get("fail_slow_at_s", &l.fail_slow_at_s)
          .Get("arrival", &l.arrival)
          .Get("rate", &l.rate)
          .Get("outstanding", &l.outstanding)
          .Get("delay_prob", &l.delay_prob)
          .Get("delay_ms", &l.delay_ms)
          .Get("crash_executor", &l.crash_executor)
          .Get("crash_at_s", &l.crash_at_s)
          .Get("crash_restart", &l.crash_restart)
          .Get("lost_after_s", &l.lost_after_s)
          .Get("network_ms", &l.network_ms)
          .Get("idempotent", &idempotent)
          .status();
      !s.ok())
    return s;
  if (cfg.Has("live.idempotent")) l.idempotent = idempotent ? 1 : 0;
  if (l.kernel == "exec" && l.sigma > 0)
    return Status::InvalidArgument("live.sigma: the exec kernel runs /bin/sleep task_ms, without noise; set sigma = 0");
  if (l.executors == 0 || l.slots == 0 || l.tasks_per_job == 0)
    return Status::InvalidArgument("live.executors, live.slots and live.tasks_per_job must be >= 1");
  if (l.arrival != "poisson" && l.arrival != "closed")
    return Status::InvalidArgument("live.arrival = '" + l.arrival + "': want poisson or closed");
  if (l.rate < 0 || l.task_ms < 0 || l.sigma < 0 || l.delay_prob < 0 || l.delay_prob > 1 || l.delay_ms < 0)
    return Status::InvalidArgument("live.rate, task_ms, sigma, delay_ms must be >= 0 and delay_prob in [0, 1]");
  if (l.fail_slow_executor >= static_cast<int64_t>(l.executors) ||
      l.crash_executor >= static_cast<int64_t>(l.executors))
    return Status::InvalidArgument("live.fail_slow_executor / live.crash_executor: no such executor");
  if (l.outstanding == 0) return Status::InvalidArgument("live.outstanding must be >= 1");

  // Every key must have been read by now, [policies.*] included (the
  // daemon's check: same message).
  if (Status s = cfg.CheckAllUsed(); !s.ok()) return s;
  sc.config = std::move(cfg);
  return sc;
}

StatusOr<std::vector<TraceJob>> TraceJobsFromRows(const std::vector<TraceRow>& rows, const std::string& origin) {
  if (rows.empty()) return Status::InvalidArgument(origin + ": no rows");
  auto slow = [](const TraceRow& r) { return r.straggler == 1 || r.fail_slow == 1; };
  // Group by job, in order of first appearance; tasks by task number.
  std::map<JobId, size_t> index;
  std::vector<std::vector<const TraceRow*>> groups;
  for (const TraceRow& r : rows) {
    auto [it, fresh] = index.emplace(r.job, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(&r);
  }
  double t0 = rows[0].start;
  for (const TraceRow& r : rows) t0 = std::min(t0, r.start);
  std::vector<TraceJob> jobs;
  for (auto& g : groups) {
    std::stable_sort(g.begin(), g.end(), [](const TraceRow* a, const TraceRow* b) { return a->task < b->task; });
    TraceJob j;
    j.submit = g[0]->start;
    std::vector<double> normal;
    for (const TraceRow* r : g) {
      j.submit = std::min(j.submit, r->start);
      if (!slow(*r)) normal.push_back(r->duration());
    }
    j.submit -= t0;
    double median = 0;
    if (!normal.empty()) {
      std::sort(normal.begin(), normal.end());
      median = normal[normal.size() / 2];
    }
    for (const TraceRow* r : g) {
      TraceTask t;
      t.executor = r->executor;
      t.duration = r->duration();
      t.normal = slow(*r) && !normal.empty() ? median : t.duration;
      t.task_class = r->task_class;
      t.input_size = r->input_size;
      j.tasks.push_back(std::move(t));
    }
    jobs.push_back(std::move(j));
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; });
  return jobs;
}

// The one trace parser (predictors, docs/TRACE_FORMAT.md); errors name file:line.
StatusOr<std::vector<TraceJob>> LoadTraceCsv(const std::string& path) {
  auto rows = ReadTraceCsv(path);
  if (!rows.ok()) return rows.status();
  return TraceJobsFromRows(*rows, path);
}

}  // namespace tailcut::sim
