#include "tailcut/sim/compare.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>

#include "tailcut/policies/registry.h"
#include "tailcut/sim/command.h"
#include "tailcut/sim/online_reference.h"

namespace tailcut::sim {

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

int ComparePolicies(const CompareOptions& o, const Scenario& scenario, const char* tool, const std::string& title,
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
