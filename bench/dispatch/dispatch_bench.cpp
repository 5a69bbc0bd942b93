// Dispatch throughput: one scheduler to one executor over loopback TCP,
// the full path (client submit -> core -> batched Work -> executor runtime
// -> batched Reports -> commit -> job done). Both run in this process, on
// their own threads, as they would as daemons on one machine.
//
//   build/bench/dispatch/dispatch_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <thread>

#include "tailcut/client/client.h"
#include "tailcut/common/log.h"
#include "tailcut/executor/executor.h"
#include "tailcut/scheduler/server.h"

namespace {

using namespace tailcut;

class Cluster {
 public:
  explicit Cluster(uint32_t slots) {
    SetLogLevel(LogLevel::kWarn);
    ServerOptions so;
    so.executor_endpoint = "tcp://127.0.0.1:*";
    so.client_endpoint = "tcp://127.0.0.1:*";
    server_ = std::make_unique<SchedulerServer>(so);
    if (!server_->Bind().ok()) std::abort();
    server_thread_ = std::thread([this] { server_->Run(); });
    executor::ExecutorOptions eo;
    eo.scheduler = server_->executor_endpoint();
    eo.slots = slots;
    eo.threads = 1;
    eo.name = "bench";
    executor_ = std::make_unique<executor::Executor>(eo);
    executor_thread_ = std::thread([this] { (void)executor_->Run(); });
    ClientOptions co;
    co.endpoint = server_->client_endpoint();
    client_ = std::make_unique<Client>(co);
    while (true) {
      auto l = client_->Executors();
      if (l.ok() && !l->empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~Cluster() {
    executor_->Stop();
    executor_thread_.join();
    server_->Stop();
    server_thread_.join();
  }
  Client& client() { return *client_; }

 private:
  std::unique_ptr<SchedulerServer> server_;
  std::unique_ptr<executor::Executor> executor_;
  std::unique_ptr<Client> client_;
  std::thread server_thread_, executor_thread_;
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
