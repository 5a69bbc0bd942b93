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

int RunSimCommand(const SimCommandOptions& o) {
  if (o.scenario.empty()) {
    std::fprintf(stderr, "tailcut sim: no scenario file given\n");
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

}  // namespace tailcut::sim
