// `tailcut whatif`: what-if straggler analysis of a recorded trace
// (docs/WHATIF.md).
#include "tailcut/sim/whatif.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>

#include "tailcut/common/log.h"
#include "tailcut/common/stats.h"
#include "tailcut/sim/command.h"
#include "tailcut/sim/simulator.h"

namespace tailcut::sim {

namespace {

// Executor windows whose median attempt ran at least this many times its
// typical time count as slow for the policy replays (fail-slow, not noise).
constexpr double kSlowWindowRatio = 1.5;
constexpr int kWindows = 10;            // per executor, over the trace's span
constexpr size_t kMinWindowAttempts = 3;  // fewer: no judgement (noise)

double MedianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The trace after dropping repeated (job, task) rows, with dense executor
// indexes and the slots a replay needs.
struct Prepared {
  std::vector<TraceRow> rows;
  std::vector<uint32_t> exec;            // per row: index into exec_ids
  std::vector<ExecutorId> exec_ids;      // sorted
  std::vector<double> typical;
  double t0 = 0, t_last = 0;             // earliest start, latest start
  uint32_t slots = 1;
  uint64_t duplicates = 0;
  bool size_scaled = false;
};

Prepared Prepare(const std::vector<TraceRow>& in) {
  Prepared p;
  // A repeated (job, task): a copy or retry. Keep the attempt that ended
  // first (the one whose result the scheduler took).
  std::map<std::pair<JobId, TaskIndex>, size_t> seen;
  for (const TraceRow& r : in) {
    auto [it, fresh] = seen.emplace(std::make_pair(r.job, r.task), p.rows.size());
    if (fresh) {
      p.rows.push_back(r);
      continue;
    }
    ++p.duplicates;
    if (r.end < p.rows[it->second].end) p.rows[it->second] = r;
  }
  for (const TraceRow& r : p.rows) p.exec_ids.push_back(r.executor);
  std::sort(p.exec_ids.begin(), p.exec_ids.end());
  p.exec_ids.erase(std::unique(p.exec_ids.begin(), p.exec_ids.end()), p.exec_ids.end());
  p.t0 = p.rows[0].start;
  p.t_last = p.rows[0].start;
  for (const TraceRow& r : p.rows) {
    p.exec.push_back(static_cast<uint32_t>(std::lower_bound(p.exec_ids.begin(), p.exec_ids.end(), r.executor) -
                                           p.exec_ids.begin()));
    p.t0 = std::min(p.t0, r.start);
    p.t_last = std::max(p.t_last, r.start);
  }
  // Slots: the most attempts any executor ran at once (ends before starts
  // at the same instant).
  std::vector<std::vector<std::pair<double, int>>> edges(p.exec_ids.size());
  for (size_t i = 0; i < p.rows.size(); ++i) {
    edges[p.exec[i]].push_back({p.rows[i].start, +1});
    edges[p.exec[i]].push_back({p.rows[i].end, -1});
  }
  for (auto& e : edges) {
    std::sort(e.begin(), e.end());
    int now = 0;
    for (auto& [t, d] : e) p.slots = std::max<uint32_t>(p.slots, static_cast<uint32_t>(std::max(0, now += d)));
  }
  p.typical = TypicalTimes(p.rows, &p.size_scaled);
  return p;
}

// Jobs of the replay: one task per row with run time dur[row], the same
// wherever the core places it (normal = duration).
std::vector<TraceJob> Jobs(const Prepared& p, const std::vector<double>& dur) {
  std::map<JobId, std::vector<size_t>> groups;
  for (size_t i = 0; i < p.rows.size(); ++i) groups[p.rows[i].job].push_back(i);
  std::vector<TraceJob> jobs;
  for (auto& [id, g] : groups) {
    std::stable_sort(g.begin(), g.end(), [&](size_t a, size_t b) { return p.rows[a].task < p.rows[b].task; });
    TraceJob j;
    j.submit = p.rows[g[0]].start;
    for (size_t i : g) {
      const TraceRow& r = p.rows[i];
      j.submit = std::min(j.submit, r.start);
      TraceTask t;
      t.executor = p.exec[i];
      t.duration = t.normal = dur[i];
      t.task_class = r.task_class;
      t.input_size = r.input_size;
      j.tasks.push_back(std::move(t));
    }
    j.submit -= p.t0;
    jobs.push_back(std::move(j));
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; });
  return jobs;
}

JctFigures Figures(const std::vector<double>& submit, const std::vector<double>& latency) {
  JctFigures f;
  std::vector<double> v;
  double first = submit.empty() ? 0 : submit[0], last = 0;
  for (size_t i = 0; i < submit.size(); ++i) {
    first = std::min(first, submit[i]);
    if (i >= latency.size() || std::isnan(latency[i])) {
      ++f.unfinished;
      continue;
    }
    v.push_back(latency[i]);
    f.total += latency[i];
    last = std::max(last, submit[i] + latency[i]);
  }
  std::sort(v.begin(), v.end());
  f.jobs = v.size();
  f.mean = Mean(v);
  f.p50 = Quantile(v, 0.50);
  f.p99 = Quantile(v, 0.99);
  f.makespan = v.empty() ? 0 : last - first;
  return f;
}

// One replay of `jobs` (with `faults`) under `entry`.
StatusOr<JctFigures> Replay(const Scenario& base, std::vector<TraceJob> jobs, std::vector<FailSlowFault> faults,
                            const std::string& entry, uint64_t seed, uint64_t* copies = nullptr) {
  Scenario sc = base;
  sc.cluster.fail_slow = std::move(faults);
  sc.workload.jobs = jobs.size();
  sc.trace = std::move(jobs);
  auto r = RunPolicy(sc, entry, seed);
  if (!r.ok()) return r.status();
  if (r->failed > 0) return Status::Internal("replay (" + entry + "): " + std::to_string(r->failed) +
                                             " jobs failed: " + r->last_failure);
  std::vector<double> submit;
  for (const TraceJob& j : sc.trace) submit.push_back(j.submit);
  JctFigures f = Figures(submit, r->latencies);
  if (f.unfinished > 0)
    return Status::Internal("replay (" + entry + "): " + std::to_string(f.unfinished) +
                            " jobs unfinished at the simulator's safety stop");
  if (copies) *copies = r->copies;
  return f;
}

Scenario ReplayScenario(const WhatifOptions& o, const Prepared& p) {
  Scenario sc;
  if (o.base) {
    sc = *o.base;
  } else {
    auto cfg = Config::Parse("", "whatif");
    auto parsed = ParseScenario(std::move(cfg).value(), ".");
    if (parsed.ok()) sc = std::move(parsed).value();
  }
  sc.name = "whatif";
  // Replays place as the recording's scheduler did, first free: a task keeps
  // its recorded time wherever it runs, and expected_finish would hold work
  // off an executor for slowness that belongs to the tasks. The policy
  // comparison puts the scenario's placement back for the chain's run.
  sc.core.placement = "first_free";
  sc.cluster.executors = static_cast<uint32_t>(p.exec_ids.size());
  sc.cluster.slots = p.slots;
  sc.cluster.speed = Distribution::Constant(1);
  sc.cluster.fail_slow.clear();
  sc.cluster.crashes.clear();
  sc.cluster.drop_prob = 0;
  sc.workload = WorkloadModel{};
  sc.workload.arrival = WorkloadModel::Arrival::kTrace;
  sc.workload.classes = {JobClass{}};
  sc.workload.classes[0].fail_prob = 0;
  return sc;
}

}  // namespace

std::vector<double> TypicalTimes(const std::vector<TraceRow>& rows, bool* size_scaled) {
  std::map<std::string, std::vector<size_t>> classes;
  for (size_t i = 0; i < rows.size(); ++i) classes[rows[i].task_class].push_back(i);
  std::vector<double> typical(rows.size(), 0);
  if (size_scaled) *size_scaled = false;
  for (auto& [name, idx] : classes) {
    bool sized = std::all_of(idx.begin(), idx.end(), [&](size_t i) { return rows[i].input_size > 0; });
    std::vector<double> v;
    for (size_t i : idx) v.push_back(sized ? rows[i].duration() / rows[i].input_size : rows[i].duration());
    double m = MedianOf(std::move(v));
    for (size_t i : idx) typical[i] = sized ? m * rows[i].input_size : m;
    if (sized && size_scaled) *size_scaled = true;
  }
  return typical;
}

StatusOr<WhatifReport> AnalyseTrace(const std::vector<TraceRow>& rows, const std::string& origin,
                                    const WhatifOptions& o) {
  if (rows.empty()) return Status::InvalidArgument(origin + ": no rows");
  for (const TraceRow& r : rows)
    if (!std::isfinite(r.start) || !std::isfinite(r.end) || r.end < r.start || r.executor == 0)
      return Status::InvalidArgument(origin + ": bad row (job " + std::to_string(r.job) + ", task " +
                                     std::to_string(r.task) + ")");
  const Prepared p = Prepare(rows);
  const Scenario base = ReplayScenario(o, p);

  WhatifReport rep;
  rep.origin = origin;
  rep.rows = rows.size();
  rep.duplicates = p.duplicates;
  rep.tasks = p.rows.size();
  rep.executors = static_cast<uint32_t>(p.exec_ids.size());
  rep.slots = p.slots;
  rep.size_scaled = p.size_scaled;

  std::vector<double> recorded;
  for (const TraceRow& r : p.rows) recorded.push_back(r.duration());
  {  // JCT as measured in the trace: first start to last end of each job.
    std::map<JobId, std::pair<double, double>> span;
    for (const TraceRow& r : p.rows) {
      auto [it, fresh] = span.emplace(r.job, std::make_pair(r.start, r.end));
      if (!fresh) it->second = {std::min(it->second.first, r.start), std::max(it->second.second, r.end)};
    }
    std::vector<double> submit, lat;
    for (auto& [id, s] : span) submit.push_back(s.first), lat.push_back(s.second - s.first);
    rep.trace = Figures(submit, lat);
    rep.jobs = span.size();
  }

  const std::string none = "none";
  auto rec = Replay(base, Jobs(p, recorded), {}, none, o.seed);
  if (!rec.ok()) return rec.status();
  rep.recorded = *rec;
  auto ideal = Replay(base, Jobs(p, p.typical), {}, none, o.seed);
  if (!ideal.ok()) return ideal.status();
  rep.ideal = *ideal;
  rep.slowdown = rep.ideal.mean > 0 ? rep.recorded.mean / rep.ideal.mean : 0;
  const double removable = rep.recorded.total - rep.ideal.total;

  // Attribution: the slowdown removed when only one part is normalised.
  auto part = [&](const std::string& name, auto in_part) -> StatusOr<WhatifPart> {
    WhatifPart w;
    w.name = name;
    std::vector<double> dur = recorded;
    for (size_t i = 0; i < p.rows.size(); ++i) {
      if (!in_part(i)) continue;
      ++w.attempts;
      w.recorded_s += recorded[i];
      w.typical_s += p.typical[i];
      dur[i] = p.typical[i];
    }
    auto f = Replay(base, Jobs(p, dur), {}, none, o.seed);
    if (!f.ok()) return f.status();
    w.normalised = *f;
    w.saved_total = rep.recorded.total - f->total;
    w.saved_mean = rep.recorded.mean - f->mean;
    w.saved_p99 = rep.recorded.p99 - f->p99;
    w.share = removable > 0 ? w.saved_total / removable : 0;
    return w;
  };
  auto by_saved = [](const WhatifPart& a, const WhatifPart& b) { return a.saved_total > b.saved_total; };
  for (uint32_t e = 0; e < p.exec_ids.size(); ++e) {
    auto w = part(std::to_string(p.exec_ids[e]), [&](size_t i) { return p.exec[i] == e; });
    if (!w.ok()) return w.status();
    rep.by_executor.push_back(std::move(w).value());
  }
  std::vector<std::string> classes;
  for (const TraceRow& r : p.rows) classes.push_back(r.task_class);
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  for (const std::string& c : classes) {
    auto w = part(c, [&](size_t i) { return p.rows[i].task_class == c; });
    if (!w.ok()) return w.status();
    rep.by_class.push_back(std::move(w).value());
  }
  std::stable_sort(rep.by_executor.begin(), rep.by_executor.end(), by_saved);
  std::stable_sort(rep.by_class.begin(), rep.by_class.end(), by_saved);
  if (o.top > 0) {
    if (rep.by_executor.size() > o.top) rep.by_executor.resize(o.top);
    if (rep.by_class.size() > o.top) rep.by_class.resize(o.top);
  }

  // Policy replays. A copy can only help if the slowness belongs to where
  // the attempt ran, so here an executor window whose median attempt ran
  // >= kSlowWindowRatio x typical becomes a fail-slow fault of that factor
  // on that executor, and its attempts keep only the rest of their time.
  if (!o.policy.empty() && o.policy != none) {
    rep.policy = o.policy;
    const double span = std::max(p.t_last - p.t0, 1e-9), len = span / kWindows;
    auto window = [&](double start) { return std::min(kWindows - 1, static_cast<int>((start - p.t0) / len)); };
    std::vector<std::vector<std::vector<double>>> ratios(p.exec_ids.size(),
                                                         std::vector<std::vector<double>>(kWindows));
    for (size_t i = 0; i < p.rows.size(); ++i)
      if (p.typical[i] > 0) ratios[p.exec[i]][window(p.rows[i].start)].push_back(recorded[i] / p.typical[i]);
    std::vector<std::vector<double>> factor(p.exec_ids.size(), std::vector<double>(kWindows, 1.0));
    std::vector<FailSlowFault> faults;
    for (uint32_t e = 0; e < p.exec_ids.size(); ++e)
      for (int w = 0; w < kWindows; ++w) {
        if (ratios[e][w].size() < kMinWindowAttempts) continue;
        double m = MedianOf(ratios[e][w]);
        if (m < kSlowWindowRatio) continue;
        factor[e][w] = m;
        rep.fail_slow_windows += 1;
        // The last window lasts to the end of the run.
        faults.push_back(FailSlowFault{e, w * len, m, w == kWindows - 1 ? 0.0 : len});
      }
    std::vector<double> intrinsic = recorded;
    for (size_t i = 0; i < p.rows.size(); ++i) intrinsic[i] /= factor[p.exec[i]][window(p.rows[i].start)];
    auto n = Replay(base, Jobs(p, intrinsic), faults, none, o.seed);
    if (!n.ok()) return n.status();
    rep.policy_none = *n;
    Scenario with_chain = base;  // the chain with its placement (the scenario's, else the default)
    with_chain.core.placement = o.base ? o.base->core.placement : CoreOptions{}.placement;
    auto c = Replay(with_chain, Jobs(p, intrinsic), faults, o.policy, o.seed, &rep.policy_copies);
    if (!c.ok()) return c.status();
    rep.policy_chain = *c;
  }
  return rep;
}

namespace {

void PrintParts(std::FILE* out, const char* what, const std::vector<WhatifPart>& parts) {
  std::fprintf(out, "\n%-12s %8s %10s %10s %12s %10s %10s %7s\n", what, "ATTEMPTS", "RUN_S", "TYPICAL_S",
               "SAVED_JOB_S", "SAVED_MEAN", "SAVED_P99", "SHARE");
  for (const WhatifPart& w : parts)
    std::fprintf(out, "%-12s %8llu %10.3f %10.3f %12.3f %10.4f %10.4f %6.1f%%\n", w.name.c_str(),
                 static_cast<unsigned long long>(w.attempts), w.recorded_s, w.typical_s, w.saved_total,
                 w.saved_mean, w.saved_p99, 100 * w.share);
}

void PrintRow(std::FILE* out, const char* name, const JctFigures& f) {
  std::fprintf(out, "%-22s %6llu %10.4f %10.4f %10.4f %12.3f %10.3f\n", name, static_cast<unsigned long long>(f.jobs),
               f.mean, f.p50, f.p99, f.total, f.makespan);
}

std::string FiguresJson(const JctFigures& f) {
  std::ostringstream o;
  o << "{\"jobs\": " << f.jobs << ", \"mean\": " << Num(f.mean) << ", \"p50\": " << Num(f.p50)
    << ", \"p99\": " << Num(f.p99) << ", \"total\": " << Num(f.total) << ", \"makespan\": " << Num(f.makespan)
    << "}";
  return o.str();
}

std::string PartsJson(const std::vector<WhatifPart>& parts) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < parts.size(); ++i) {
    const WhatifPart& w = parts[i];
    o << (i ? ",\n  " : "") << "{\"name\": " << JsonString(w.name);
    if (!w.label.empty()) o << ", \"label\": " << JsonString(w.label);
    o << ", \"attempts\": " << w.attempts
      << ", \"run_s\": " << Num(w.recorded_s) << ", \"typical_s\": " << Num(w.typical_s)
      << ", \"saved_total\": " << Num(w.saved_total) << ", \"saved_mean\": " << Num(w.saved_mean)
      << ", \"saved_p99\": " << Num(w.saved_p99) << ", \"share\": " << Num(w.share)
      << ", \"normalised\": " << FiguresJson(w.normalised) << "}";
  }
  o << "]";
  return o.str();
}

// Executor names from the comment lines `tailcut trace` and `tailcut bench
// --trace` write: "# executor ID = NAME".
std::map<std::string, std::string> ExecutorNames(const std::string& path) {
  std::map<std::string, std::string> names;
  std::ifstream in(path);
  const std::string prefix = "# executor ";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    const size_t eq = line.find(" = ", prefix.size());
    if (eq == std::string::npos) continue;
    std::string id = line.substr(prefix.size(), eq - prefix.size());
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) continue;
    names[id] = line.substr(eq + 3);
  }
  return names;
}

}  // namespace

void PrintWhatif(std::FILE* out, const WhatifReport& r) {
  std::fprintf(out, "whatif: %s: %llu jobs, %llu tasks on %u executors x %u slots%s%s\n", r.origin.c_str(),
               static_cast<unsigned long long>(r.jobs), static_cast<unsigned long long>(r.tasks), r.executors,
               r.slots, r.size_scaled ? ", typical time scaled by input_size" : "",
               r.duplicates ? (", " + std::to_string(r.duplicates) + " repeated (job, task) rows left out").c_str()
                            : "");
  std::fprintf(out, "\n%-22s %6s %10s %10s %10s %12s %10s\n", "JCT (s)", "JOBS", "MEAN", "P50", "P99", "TOTAL",
               "MAKESPAN");
  PrintRow(out, "trace (measured)", r.trace);
  PrintRow(out, "replay as recorded", r.recorded);
  PrintRow(out, "replay idealised", r.ideal);
  std::fprintf(out, "straggler slowdown: mean JCT x%.3f, p99 x%.3f; %.3f job-seconds (%.4f s per job)\n",
               r.slowdown, r.ideal.p99 > 0 ? r.recorded.p99 / r.ideal.p99 : 0, r.recorded.total - r.ideal.total,
               r.recorded.mean - r.ideal.mean);
  PrintParts(out, "EXECUTOR", r.by_executor);
  PrintParts(out, "TASK_CLASS", r.by_class);
  if (!r.by_executor.empty())
    std::fprintf(out, "\ntop cause: executor %s%s (%.4f s per job, %.1f%% of the slowdown)\n",
                 r.by_executor[0].name.c_str(),
                 r.by_executor[0].label.empty() ? "" : (" = " + r.by_executor[0].label).c_str(),
                 r.by_executor[0].saved_mean, 100 * r.by_executor[0].share);
  if (!r.policy.empty()) {
    std::fprintf(out, "\npolicy replay (%g executor windows slow):\n%-22s %6s %10s %10s %10s %12s %10s\n",
                 r.fail_slow_windows, "JCT (s)", "JOBS", "MEAN", "P50", "P99", "TOTAL", "MAKESPAN");
    PrintRow(out, "none", r.policy_none);
    PrintRow(out, r.policy.c_str(), r.policy_chain);
    std::fprintf(out, "%s would have saved %.4f s mean JCT (%.1f%%), %.4f s p99, with %llu copies\n",
                 r.policy.c_str(), r.policy_none.mean - r.policy_chain.mean,
                 r.policy_none.mean > 0 ? 100 * (r.policy_none.mean - r.policy_chain.mean) / r.policy_none.mean : 0,
                 r.policy_none.p99 - r.policy_chain.p99, static_cast<unsigned long long>(r.policy_copies));
  }
}

std::string WhatifJson(const WhatifReport& r) {
  std::ostringstream o;
  o << "{\"trace\": " << JsonString(r.origin) << ", \"rows\": " << r.rows << ", \"jobs\": " << r.jobs
    << ", \"tasks\": " << r.tasks << ", \"duplicates\": " << r.duplicates << ", \"executors\": " << r.executors
    << ", \"slots\": " << r.slots << ", \"size_scaled\": " << (r.size_scaled ? "true" : "false")
    << ",\n \"measured\": " << FiguresJson(r.trace) << ",\n \"recorded\": " << FiguresJson(r.recorded)
    << ",\n \"ideal\": " << FiguresJson(r.ideal) << ",\n \"slowdown\": " << Num(r.slowdown)
    << ", \"slowdown_s\": " << Num(r.recorded.total - r.ideal.total)
    << ",\n \"by_executor\": " << PartsJson(r.by_executor) << ",\n \"by_class\": " << PartsJson(r.by_class);
  if (!r.policy.empty())
    o << ",\n \"policy\": {\"entry\": " << JsonString(r.policy) << ", \"slow_windows\": " << Num(r.fail_slow_windows)
      << ", \"none\": " << FiguresJson(r.policy_none) << ", \"chain\": " << FiguresJson(r.policy_chain)
      << ", \"copies\": " << r.policy_copies << ", \"saved_mean\": " << Num(r.policy_none.mean - r.policy_chain.mean)
      << ", \"saved_p99\": " << Num(r.policy_none.p99 - r.policy_chain.p99) << "}";
  o << "}\n";
  return o.str();
}

int RunWhatifCommand(const WhatifCommandOptions& c) {
  if (c.trace.empty()) {
    std::fprintf(stderr, "tailcut whatif: no trace file given\n");
    return 2;
  }
  if (GetLogLevel() < LogLevel::kWarn) SetLogLevel(LogLevel::kWarn);
  auto wall0 = std::chrono::steady_clock::now();
  auto rows = ReadTraceCsv(c.trace);
  if (!rows.ok()) {
    std::fprintf(stderr, "tailcut whatif: %s\n", rows.status().message().c_str());
    return 2;
  }
  WhatifOptions o;
  o.seed = c.seed;
  o.policy = c.policy;
  o.top = c.top;
  StatusOr<Scenario> sc = Scenario{};
  if (!c.scenario.empty()) {
    sc = LoadScenario(c.scenario);
    if (!sc.ok()) {
      std::fprintf(stderr, "tailcut whatif: %s\n", sc.status().message().c_str());
      return 2;
    }
    o.base = &*sc;
    if (!c.has_seed) o.seed = sc->seed;
  }
  auto rep = AnalyseTrace(*rows, c.trace, o);
  if (!rep.ok()) {
    std::fprintf(stderr, "tailcut whatif: %s\n", rep.status().message().c_str());
    return rep.status().code() == Status::Code::kInvalidArgument ? 2 : 1;
  }
  const std::map<std::string, std::string> names = ExecutorNames(c.trace);
  for (WhatifPart& w : rep->by_executor)
    if (auto it = names.find(w.name); it != names.end()) w.label = it->second;
  if (c.json) std::fputs(WhatifJson(*rep).c_str(), stdout);
  else PrintWhatif(stdout, *rep);
  std::fprintf(stderr, "whatif: %.1f s wall\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count());
  return 0;
}

}  // namespace tailcut::sim
