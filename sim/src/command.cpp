#include "tailcut/sim/command.h"
#include "tailcut/policies/registry.h"
#include "tailcut/sim/clairvoyant.h"
#include "tailcut/sim/online_reference.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <sstream>

#include "tailcut/common/log.h"

namespace tailcut::sim {

const char kSimUsage[] = R"(usage: tailcut sim SCENARIO.toml [--policy LIST] [--seed N] [--json]
                   [--csv FILE] [--plot FILE.svg] [--live-model] [--set KEY=VALUE]...
                   [--speed-shares] [--no-online]

Simulates the scenario on virtual time with the real scheduler core, once per
policy entry, on the same seeded workload, and compares them side by side.

  --policy LIST   comma-separated entries, one run each (default: the
                  scenario's policies.chain as one entry, else none).
                  Inside an entry '+' chains policies in one run:
                    --policy none,spark,clone+spark,default
                  Names: none, default, and the built-in policies
                  (parameters from the scenario's [policies.NAME] tables).
  --seed N        RNG seed (default: the scenario's `seed`, else 1)
  --json          print a JSON array: policy, jobs, mean, p50, p90, p99, p999
                  (seconds), extra_work, extra_machine (fractions), copies,
                  bound_p50, bound_p99, p50_x_bound, p99_x_bound, and more;
                  the last element is the bound ("policy": "bound")
  --csv FILE      per-job latencies: policy,job,latency_s
  --plot FILE     SVG of the job-latency CDF per policy (log-x)
  --live-model    simulate the scenario's [live] section (what `tailcut bench`
                  runs on real daemons) instead of its main sections
  --set KEY=VALUE change a scenario key (a TOML value) before loading, e.g.
                  --set cluster.edges.edge_quorum=0.8; repeatable
  --speed-shares  make every workload class divisible: the scheduler sizes
                  each task's share of the job's work by its executor's
                  measured speed (docs/JOBS.md; classes need rule = all)
  --no-online     skip the online reference (its sweep runs the scenario
                  once per threshold ratio: 8 more runs)

Latency is submit -> job finished. Extra work is (machine time of all
attempts - machine time of committed attempts) / committed machine time.
XMACH_% (extra_machine) is machine time relative to the `none` entry of the
same run. The row (bound) is a clairvoyant list schedule of the same jobs
without stragglers, each quantile at most none's; P50/B and P99/B are each
policy's p50 and p99 as multiples of it. With a `none` entry the last row,
(online), is the best single detection threshold a scheduler that knows the
run-time distribution can use (copy or restart every attempt still running
at R x its class median, R swept; docs/BENCHMARKS.md). Wall time and peak RSS are printed to
stderr. See docs/SIMULATOR.md.
)";


int RunSimCommand(const SimCommandOptions& o) {
  if (o.help) {
    std::fputs(kSimUsage, stdout);
    return 0;
  }
  if (o.scenario.empty()) {
    std::fputs(kSimUsage, stderr);
    return 2;
  }
  if (GetLogLevel() < LogLevel::kWarn) SetLogLevel(LogLevel::kWarn);  // the core's per-job lines are noise here
  auto wall0 = std::chrono::steady_clock::now();
  auto sc = LoadScenario(o.scenario, o.overrides);
  if (!sc.ok()) {
    std::fprintf(stderr, "tailcut sim: %s\n", sc.status().message().c_str());
    return 2;
  }
  if (o.live_model) *sc = LiveAsSimScenario(*sc);
  if (o.speed_shares) {
    for (JobClass& c : sc->workload.classes) {
      if (c.rule != CompletionKind::kAll) {
        std::fprintf(stderr, "tailcut sim: --speed-shares needs rule = all, class '%s' has another\n", c.name.c_str());
        return 2;
      }
      c.divisible = true;
    }
  }
  uint64_t seed = o.has_seed ? o.seed : sc->seed;
  std::string name = sc->name.empty() ? o.scenario : sc->name;
  // Other owners' streams are not in the bound's or the online sweep's
  // model of the workload: no reference rows then.
  const bool refs = sc->workload.streams.empty();
  int rc = ComparePolicies(o, *sc, "tailcut sim", "scenario " + name + ", seed " + std::to_string(seed),
                           "job latency CDF: " + name, [&](const std::string& entry) {
                             auto r = RunPolicy(*sc, entry, seed);
                             if (r.ok())
                               std::fprintf(stderr,
                                            "sim: %s, policy %s: %llu jobs, %llu tasks, %llu events, %.1f s virtual, "
                                            "%.2f s wall\n",
                                            name.c_str(), entry.c_str(), static_cast<unsigned long long>(r->jobs),
                                            static_cast<unsigned long long>(r->tasks),
                                            static_cast<unsigned long long>(r->events), r->virtual_s, r->wall_s);
                             return r;
                           },
                           !refs ? BoundFn() : [&] {
                             BoundOptions bo;
                             bo.seed = seed;
                             SimResult b = ClairvoyantBound(*sc, bo);
                             std::fprintf(stderr, "sim: %s, clairvoyant bound: %llu jobs, %.2f s wall\n", name.c_str(),
                                          static_cast<unsigned long long>(b.jobs), b.wall_s);
                             return b;
                           },
                           !refs ? OnlineFn()
                                 : OnlineFn([&](const SimResult& none) { return OnlineRow(*sc, seed, none, "sim"); }));
  std::fflush(stdout);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  std::fprintf(stderr, "sim: total wall time %.2f s, peak RSS %.1f MiB\n", wall,
               static_cast<double>(PeakRssBytes()) / (1024.0 * 1024.0));
  return rc;
}

StatusOr<SimResult> OnlineRow(const Scenario& scenario, uint64_t seed, const SimResult& none, const char* tool) {
  auto wall0 = std::chrono::steady_clock::now();
  auto r = OnlineReference(scenario, seed, none);
  if (!r.ok()) return r.status();
  r->result.online_ratio = r->ratio;
  std::fprintf(stderr, "%s: online reference: %zu ratios swept, best %.2f x median (0 = never), %.2f s wall\n", tool,
               OnlineReferenceRatios().size(), r->ratio,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count());
  return std::move(r->result);
}

void FillExtraMachine(std::vector<SimResult>* results) {
  const SimResult* none = nullptr;
  for (const SimResult& r : *results)
    if (r.policy == "none") none = &r;
  const double base = none ? none->machine_s : 0;
  for (SimResult& r : *results)
    r.extra_machine = base > 0 ? (r.machine_s - base) / base : std::numeric_limits<double>::quiet_NaN();
}

void CapAtNone(SimResult* bound, const SimResult& none) {
  for (auto q : {&SimResult::mean, &SimResult::p50, &SimResult::p90, &SimResult::p99, &SimResult::p999})
    bound->*q = std::min(bound->*q, none.*q);
}

void FillBound(std::vector<SimResult>* results, const SimResult& bound) {
  for (SimResult& r : *results) {
    r.bound_p50 = bound.p50;
    r.bound_p99 = bound.p99;
  }
}

int ComparePolicies(const SimCommandOptions& o, const Scenario& scenario, const char* tool, const std::string& title,
                    const std::string& plot_title, const RunEntryFn& run, const BoundFn& bound,
                    const OnlineFn& online) {
  std::vector<std::string> entries = SplitPolicyList(o.policies.empty() ? scenario.chain : o.policies);
  if (entries.empty()) {
    std::fprintf(stderr, "%s: --policy names no policy\n", tool);
    return 2;
  }
  std::vector<SimResult> results;
  for (const std::string& entry : entries) {
    auto r = run(entry);
    if (!r.ok()) {
      std::fprintf(stderr, "%s: policy '%s': %s\n", tool, entry.c_str(), r.status().message().c_str());
      return r.status().code() == Status::Code::kInvalidArgument ? 2 : 1;
    }
    results.push_back(std::move(r).value());
  }
  FillExtraMachine(&results);
  const SimResult* none = nullptr;
  for (const SimResult& r : results)
    if (r.policy == "none") none = &r;
  auto vs_none = [&](SimResult* ref) {
    ref->extra_machine = none && none->machine_s > 0 ? (ref->machine_s - none->machine_s) / none->machine_s
                                                     : std::numeric_limits<double>::quiet_NaN();
  };
  std::vector<SimResult> bounded;  // the reference rows, last (rows and plot lines): bound, online
  if (bound) {
    SimResult b = bound();
    vs_none(&b);
    if (none) CapAtNone(&b, *none);
    bounded.push_back(std::move(b));
  }
  if (online && none && !o.no_online) {
    auto r = online(*none);
    if (!r.ok()) {
      std::fprintf(stderr, "%s: online reference: %s\n", tool, r.status().message().c_str());
    } else {
      vs_none(&*r);
      bounded.push_back(std::move(r).value());
    }
  }
  if (bound) {
    FillBound(&results, bounded[0]);
    FillBound(&bounded, bounded[0]);
  }
  if (o.json) {
    std::vector<SimResult> all = results;
    for (const SimResult& b : bounded) all.push_back(b);
    std::printf("%s\n", ResultsJson(all).c_str());
  } else {
    std::printf("%s\n", title.c_str());
    PrintTable(stdout, results, bounded);
  }
  int rc = 0;
  auto check = [&](Status s) {
    if (s.ok()) return;
    std::fprintf(stderr, "%s: %s\n", tool, s.message().c_str());
    rc = 1;
  };
  if (!o.csv.empty()) check(WriteLatencyCsv(o.csv, results));
  if (!o.plot.empty()) {
    std::vector<SimResult> lines = results;
    for (SimResult& b : bounded) lines.push_back(std::move(b));
    check(WriteFile(o.plot, CdfSvg(lines, plot_title)));
  }
  std::fflush(stdout);
  for (auto& r : results)
    if (r.unfinished) rc = 1;
  return rc;
}

}  // namespace tailcut::sim
