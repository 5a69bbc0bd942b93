// Dispatch throughput: one scheduler to one executor over loopback TCP,
// the full path (client submit -> core -> batched Work -> executor runtime
// -> batched Reports -> commit -> job done): the scheduler in this process,
// the executor a daemon on the same machine (LocalCluster). Next to it, in
// the same run, the wire limit: raw ZeroMQ round trips of small messages
// between a DEALER and a ROUTER on loopback TCP, the sockets tailcut uses.
//
//   build/bench/dispatch/dispatch_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "tailcut/client/client.h"
#include "tailcut/client/local_cluster.h"
#include "tailcut/common/log.h"
#include "tailcut/server/server.h"

namespace {

using namespace tailcut;

// The scheduler in this process, one executor daemon (tailcut-executor, one
// runtime thread) as a child: the path a real deployment takes.
class Cluster {
 public:
  // `journal`: 0 none (in memory), 1 the daemon's default journal
  // (journal_sync "normal"), 2 journal_sync "full" (fsync per group commit),
  // 3 three replicas (docs/RELIABILITY.md, "Replicas"): this scheduler and
  // two followers in this process, each group commit one Raft entry on a
  // quorum's disks; this one is made leader by a shorter election timeout.
  // `keys`: CURVE on both links (the default of LocalCluster and of any
  // networked deployment), or plain loopback.
  Cluster(uint32_t slots, int journal, bool keys) {
    SetLogLevel(LogLevel::kWarn);
    LocalClusterOptions o;
    o.name = "dispatch-bench";
    o.executor_binary = TAILCUT_EXECUTOR_BIN;
    o.keys = keys;
    if (journal) {
      state_dir_ = std::filesystem::temp_directory_path() /
                   ("tailcut-dispatch-journal-" + std::to_string(getpid()) + "-" + std::to_string(journal));
      o.server.state_dir = (state_dir_ / "r1").string();
      o.server.journal_sync_full = journal == 2;
    }
    // Both configurations with the same executor queues (the replicated
    // defaults, say): TAILCUT_BENCH_PIPELINE_S, TAILCUT_BENCH_QUEUE_PER_SLOT
    // set core.pipeline_s and core.max_queue_per_slot before the replicas' own.
    if (const char* v = std::getenv("TAILCUT_BENCH_PIPELINE_S")) o.server.core.pipeline_s = std::atof(v);
    if (const char* v = std::getenv("TAILCUT_BENCH_QUEUE_PER_SLOT"))
      o.server.core.max_queue_per_slot = static_cast<uint32_t>(std::atoi(v));
    if (journal == 3) StartFollowers(&o.server);
    auto started = LocalCluster::Start(o);
    if (!started.ok()) Die(started.status());
    cluster_ = std::move(started).value();
    LocalExecutorSpec e;
    e.flags = {"--slots", std::to_string(slots), "--threads", "1", "--name", "bench", "--log-level", "warn"};
    if (auto added = cluster_->AddExecutor(e); !added.ok()) Die(added.status());
    if (Status s = cluster_->WaitForExecutors(1, 15); !s.ok()) Die(s);
    client_ = std::make_unique<Client>(cluster_->client_options());
  }
  ~Cluster() {
    client_.reset();
    cluster_.reset();
    for (auto& f : followers_) f->Stop();
    for (auto& t : follower_loops_) t.join();
    followers_.clear();
    std::error_code ec;
    if (!state_dir_.empty()) std::filesystem::remove_all(state_dir_, ec);
  }
  Client& client() { return *client_; }

  // The cluster for a journal setting, shared by the benchmarks. One at a
  // time: an idle cluster still polls and heartbeats, which on a small
  // machine would tax whichever configuration is measured after it.
  static Cluster& Get(int64_t journal, int64_t keys) {
    static std::unique_ptr<Cluster> current;
    static std::pair<int64_t, int64_t> current_setting{-1, -1};
    if (std::pair{journal, keys} != current_setting) {
      current.reset();
      current = std::make_unique<Cluster>(2, static_cast<int>(journal), keys != 0);
      current_setting = {journal, keys};
    }
    return *current;
  }

 private:
  // Replicas 2 and 3, following `leader`'s group (its options get replica 1).
  void StartFollowers(ServerOptions* leader) {
    std::filesystem::create_directories(state_dir_);
    const std::string key = (state_dir_ / "replica.key").string();
    std::FILE* f = std::fopen(key.c_str(), "w");
    if (!f) Die(Status::IoError("cannot write " + key));
    std::fputs("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", f);
    std::fclose(f);
    ReplicationOptions group;
    group.key_file = key;
    for (uint64_t id = 1; id <= 3; ++id) {
      auto port = [] { return std::to_string(FreeLoopbackPort()); };
      group.peers.push_back({id, "127.0.0.1:" + port(), "tcp://127.0.0.1:" + port(), "tcp://127.0.0.1:" + port()});
    }
    leader->replicas = group;
    leader->replicas.id = 1;
    for (uint64_t id = 2; id <= 3; ++id) {
      ServerOptions o;
      o.state_dir = (state_dir_ / ("r" + std::to_string(id))).string();
      o.replicas = group;
      o.replicas.id = id;
      o.replicas.election_timeout_ms = 5000;  // replica 1 stands first
      auto& server = followers_.emplace_back(std::make_unique<SchedulerServer>(o));
      if (Status s = server->Bind(); !s.ok()) Die(s);
      follower_loops_.emplace_back([s = server.get()] { s->Run(); });
    }
  }

  std::filesystem::path state_dir_;
  std::vector<std::unique_ptr<SchedulerServer>> followers_;
  std::vector<std::thread> follower_loops_;
  [[noreturn]] static void Die(const Status& s) {
    std::fprintf(stderr, "dispatch_bench: %s\n", s.message().c_str());
    std::exit(1);
  }
  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Client> client_;
};

// One job of `tasks` no-op tasks per iteration; items/s = tasks/s end to
// end. Second argument: the journal (0 none, 1 sync normal = the daemon's
// default, 2 sync full); third: keys (0 plain, 1 CURVE).
void BM_NoopJobThroughput(benchmark::State& state) {
  Cluster& cluster = Cluster::Get(state.range(1), state.range(2));
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
BENCHMARK(BM_NoopJobThroughput)
    ->ArgNames({"tasks", "journal", "keys"})
    ->ArgsProduct({{1000, 10000, 100000}, {0, 1, 2, 3}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Latency of a single one-task job: the scheduler's per-job overhead (with
// the journal: one group commit for the accept and one for the finish).
void BM_SingleTaskJobLatency(benchmark::State& state) {
  Cluster& cluster = Cluster::Get(state.range(0), state.range(1));
  WaitOptions w;
  for (auto _ : state) {
    auto id = cluster.client().Submit(FanoutJob("noop", "", 1));
    auto st = cluster.client().Wait(*id, w);
    if (!st.ok()) state.SkipWithError("wait failed");
  }
}
BENCHMARK(BM_SingleTaskJobLatency)
    ->ArgNames({"journal", "keys"})
    ->ArgsProduct({{0, 1, 2, 3}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The same job through Client::SubmitAndWait: one request, the final
// status pushed (SubmitJob.watch), as `tailcut submit --wait` does.
void BM_SingleTaskJobOneRequest(benchmark::State& state) {
  Cluster& cluster = Cluster::Get(state.range(0), state.range(1));
  for (auto _ : state) {
    auto st = cluster.client().SubmitAndWait(FanoutJob("noop", "", 1));
    if (!st.ok() || st->state() != wire::JOB_SUCCEEDED) state.SkipWithError("job did not succeed");
  }
}
BENCHMARK(BM_SingleTaskJobOneRequest)
    ->ArgNames({"journal", "keys"})
    ->ArgsProduct({{0, 1, 2, 3}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// Raw ZeroMQ: `window` 32-byte messages DEALER -> ROUTER, each echoed back,
// per iteration; items/s = round trips/s. Window 1 is ping-pong (latency
// bound); larger windows pipeline, as tailcut's batched Work and Reports do,
// so tasks/s above is compared with round trips/s at a large window.
void BM_ZmqRoundTrips(benchmark::State& state) {
  const auto window = static_cast<int>(state.range(0));
  zmq::context_t ctx;
  zmq::socket_t router(ctx, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.bind("tcp://127.0.0.1:*");
  const std::string endpoint = router.get(zmq::sockopt::last_endpoint);
  std::atomic<bool> stop{false};
  std::thread echo([&] {  // the router is this thread's from here on
    zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
    zmq::message_t id, body;
    while (!stop.load(std::memory_order_relaxed)) {
      zmq::poll(&item, 1, std::chrono::milliseconds(20));
      while (router.recv(id, zmq::recv_flags::dontwait)) {
        (void)router.recv(body);
        router.send(id, zmq::send_flags::sndmore);
        router.send(body, zmq::send_flags::none);
      }
    }
  });
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(endpoint);
  const std::string payload(32, 'x');
  zmq::message_t reply;
  for (auto _ : state) {
    for (int i = 0; i < window; ++i) dealer.send(zmq::buffer(payload), zmq::send_flags::none);
    for (int i = 0; i < window; ++i) (void)dealer.recv(reply);
  }
  stop = true;
  echo.join();
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * window);
  state.counters["round_trips_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * window, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ZmqRoundTrips)->ArgName("window")->Arg(1)->Arg(64)->Arg(512)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
