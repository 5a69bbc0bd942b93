// Simulator scale: the datacenter scenario (10,000 executors, 1,000,000
// tasks) must finish within 60 s of wall time on a small machine, with
// bounded memory. Reports wall time, events/s and peak RSS (getrusage).
//
//   build/bench/sim/sim_bench                       # both benchmarks
//   build/bench/sim/sim_bench --benchmark_filter=Datacenter
//   TAILCUT_SIM_POLICY=spark build/bench/sim/sim_bench   # another policy
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "tailcut/sim/command.h"
#include "tailcut/sim/simulator.h"

namespace tailcut::sim {
namespace {

std::string Policy() {
  const char* p = std::getenv("TAILCUT_SIM_POLICY");
  return p && *p ? p : "none";
}

void RunScenario(benchmark::State& state, const char* file, double limit_s) {
  auto sc = LoadScenario(std::string(TAILCUT_SOURCE_DIR) + "/configs/scenarios/" + file);
  if (!sc.ok()) {
    state.SkipWithError(sc.status().message().c_str());
    return;
  }
  SimResult r;
  for (auto _ : state) {
    auto res = RunPolicy(*sc, Policy(), sc->seed);
    if (!res.ok()) {
      state.SkipWithError(res.status().message().c_str());
      return;
    }
    r = std::move(res).value();
  }
  state.counters["executors"] = sc->cluster.executors;
  state.counters["tasks"] = static_cast<double>(r.tasks);
  state.counters["jobs"] = static_cast<double>(r.jobs);
  state.counters["events"] = static_cast<double>(r.events);
  state.counters["events_per_s"] = static_cast<double>(r.events) / r.wall_s;
  state.counters["wall_s"] = r.wall_s;
  state.counters["virtual_s"] = r.virtual_s;
  state.counters["p99_s"] = r.p99;
  state.counters["peak_rss_mib"] = static_cast<double>(PeakRssBytes()) / (1024.0 * 1024.0);
  if (r.unfinished > 0) state.SkipWithError("jobs left unfinished");
  if (r.wall_s > limit_s) state.SkipWithError("slower than the wall-time limit");
}

void BM_SimHealthy(benchmark::State& state) { RunScenario(state, "healthy.toml", 10); }
BENCHMARK(BM_SimHealthy)->Unit(benchmark::kMillisecond)->Iterations(3);

// 10,000 executors, 1,000,000 tasks: must stay under 60 s.
void BM_SimDatacenter(benchmark::State& state) { RunScenario(state, "datacenter.toml", 60); }
BENCHMARK(BM_SimDatacenter)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
}  // namespace tailcut::sim

BENCHMARK_MAIN();
