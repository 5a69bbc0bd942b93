// Dispatch throughput: one scheduler to one executor over loopback TCP,
// the full path (client submit -> core -> batched Work -> executor runtime
// -> batched Reports -> commit -> job done): the scheduler in this process,
// the executor a daemon on the same machine (LocalCluster).
//
//   build/bench/dispatch/dispatch_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

#include "tailcut/client/client.h"
#include "tailcut/client/local_cluster.h"
#include "tailcut/common/log.h"

namespace {

using namespace tailcut;

// The scheduler in this process, one executor daemon (tailcut-executor, one
// runtime thread) as a child: the path a real deployment takes.
class Cluster {
 public:
  explicit Cluster(uint32_t slots) {
    SetLogLevel(LogLevel::kWarn);
    LocalClusterOptions o;
    o.name = "dispatch-bench";
    o.executor_binary = TAILCUT_EXECUTOR_BIN;
    auto started = LocalCluster::Start(o);
    if (!started.ok()) Die(started.status());
    cluster_ = std::move(started).value();
    LocalExecutorSpec e;
    e.flags = {"--slots", std::to_string(slots), "--threads", "1", "--name", "bench", "--log-level", "warn"};
    if (auto added = cluster_->AddExecutor(e); !added.ok()) Die(added.status());
    if (Status s = cluster_->WaitForExecutors(1, 15); !s.ok()) Die(s);
    client_ = std::make_unique<Client>(cluster_->client_options());
  }
  Client& client() { return *client_; }

 private:
  [[noreturn]] static void Die(const Status& s) {
    std::fprintf(stderr, "dispatch_bench: %s\n", s.message().c_str());
    std::exit(1);
  }
  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> client_;
};

// One job of `tasks` no-op tasks per iteration; items/s = tasks/s end to end.
void BM_NoopJobThroughput(benchmark::State& state) {
  static Cluster cluster(2);
  const auto tasks = static_cast<uint32_t>(state.range(0));
  WaitOptions w;
  w.progress_interval_s = 1;
  for (auto _ : state) {
    auto id = cluster.client().Submit(FanoutJob("noop", "", tasks));
    if (!id.ok()) {
      state.SkipWithError(id.status().message().c_str());
      break;
    }
    auto st = cluster.client().Wait(*id, w);
    if (!st.ok() || st->state() != wire::JOB_SUCCEEDED) {
      state.SkipWithError("job did not succeed");
      break;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * tasks);
  state.counters["tasks_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()) * tasks,
                                                      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_NoopJobThroughput)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime();

// Latency of a single one-task job: the scheduler's per-job overhead.
void BM_SingleTaskJobLatency(benchmark::State& state) {
  static Cluster cluster(2);
  WaitOptions w;
  for (auto _ : state) {
    auto id = cluster.client().Submit(FanoutJob("noop", "", 1));
    auto st = cluster.client().Wait(*id, w);
    if (!st.ok()) state.SkipWithError("wait failed");
  }
}
BENCHMARK(BM_SingleTaskJobLatency)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
