// Per-call cost of the predictors on a warmed-up suite (16 executors, 4
// task classes, skewed inputs, 5% stragglers).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "health_detector.h"
#include "tailcut/predictors/predictor.h"
#include "quantile_sketch.h"
#include "tailcut/predictors/trace.h"

using namespace tailcut;

namespace {

const std::vector<AttemptRecord>& Records() {
  static const std::vector<AttemptRecord> recs = [] {
    TraceGenOptions g;
    g.executors = 16;
    g.tasks = 1 << 16;
    g.classes = 4;
    g.skew = 100;
    g.straggler_prob = 0.05;
    g.seed = 9;
    std::vector<AttemptRecord> out;
    for (const TraceRow& r : GenerateTrace(g)) out.push_back(r.ToRecord());
    return out;
  }();
  return recs;
}

PredictorOptions Opts(int kind) {
  PredictorOptions o;
  o.latency = kind == 0 ? "quantile" : "regression";
  return o;
}

PredictorSuite Warm(int kind) {
  PredictorSuite s(Opts(kind));
  const auto& recs = Records();
  for (size_t i = 0; i < recs.size() / 2; ++i) s.Observe(recs[i]);
  s.HealthTransitions();
  return s;
}

void BM_SuiteObserve(benchmark::State& st) {
  PredictorSuite s = Warm(static_cast<int>(st.range(0)));
  const auto& recs = Records();
  size_t i = recs.size() / 2;
  for (auto _ : st) {
    s.Observe(recs[i]);
    if (++i == recs.size()) i = recs.size() / 2;
  }
  st.SetLabel(s.latency().name().data());
}
BENCHMARK(BM_SuiteObserve)->Arg(0)->Arg(1);

void BM_SuitePredict(benchmark::State& st) {
  PredictorSuite s = Warm(static_cast<int>(st.range(0)));
  const auto& recs = Records();
  size_t i = 0;
  for (auto _ : st) {
    const AttemptRecord& r = recs[i];
    benchmark::DoNotOptimize(s.Predict(r.task_class, r.input_size, r.executor));
    if (++i == recs.size()) i = 0;
  }
  st.SetLabel(s.latency().name().data());
}
BENCHMARK(BM_SuitePredict)->Arg(0)->Arg(1);

// range(1): 0 = elapsed only, 1 = with progress (LATE)
void BM_SuiteAssess(benchmark::State& st) {
  PredictorSuite s = Warm(static_cast<int>(st.range(0)));
  const auto& recs = Records();
  size_t i = 0;
  for (auto _ : st) {
    const AttemptRecord& r = recs[i];
    RunningAttempt a;
    a.executor = r.executor;
    a.task_class = r.task_class;
    a.input_size = r.input_size;
    a.elapsed = 0.7 * r.Duration();
    a.progress = st.range(1) ? 0.6 : -1;
    benchmark::DoNotOptimize(s.Assess(a));
    if (++i == recs.size()) i = 0;
  }
  st.SetLabel(std::string(s.latency().name()) + (st.range(1) ? " progress" : " elapsed-only"));
}
BENCHMARK(BM_SuiteAssess)->Args({0, 0})->Args({0, 1})->Args({1, 0})->Args({1, 1});

// The scheduler's pattern: one Observe, then a few Assess calls on running tasks.
void BM_SuiteObserveThenAssess(benchmark::State& st) {
  PredictorSuite s = Warm(static_cast<int>(st.range(0)));
  const auto& recs = Records();
  size_t i = recs.size() / 2;
  for (auto _ : st) {
    s.Observe(recs[i]);
    RunningAttempt a;
    a.executor = recs[i].executor;
    a.task_class = recs[i].task_class;
    a.input_size = recs[i].input_size;
    a.elapsed = 1.0;
    benchmark::DoNotOptimize(s.Assess(a));
    if (++i == recs.size()) i = recs.size() / 2;
  }
  st.SetLabel(s.latency().name().data());
}
BENCHMARK(BM_SuiteObserveThenAssess)->Arg(0)->Arg(1);

void BM_HealthObserve(benchmark::State& st) {
  CusumHealthDetector d;
  double t = 0;
  uint64_t i = 0;
  for (auto _ : st) {
    double r = 0.8 + 0.4 * static_cast<double>((i * 2654435761u) % 1000) / 1000.0;
    d.Observe(1 + i % 16, r, t += 0.1);
    ++i;
  }
}
BENCHMARK(BM_HealthObserve);

void BM_SketchAdd(benchmark::State& st) {
  BinnedQuantiles q;
  uint64_t i = 0;
  for (auto _ : st) {
    q.Add(static_cast<double>((i++ * 2654435761u) % 1000) / 500.0);
  }
}
BENCHMARK(BM_SketchAdd);

}  // namespace

BENCHMARK_MAIN();
