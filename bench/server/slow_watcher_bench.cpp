// A client that reads nothing while 1,000 of its watches stream (issue 43;
// docs/RELIABILITY.md, "A client that does not read"). The real daemons on
// loopback (LocalCluster, no keys, journal on): tailcut-scheduler and two
// tailcut-executors of 16 slots. One client connection sets up 1,000
// watches whose results stream (stream_results), in one of two shapes:
//   one:  it submits one job of 20,000 `sleep ms=15` tasks and watches it
//         999 times more (every result is pushed to all 1,000 watches:
//         ~20 million results, far past client_backlog_bytes);
//   jobs: it submits 1,000 jobs of 20 such tasks (20,000 results in all).
// Then it reads as they come ("reads") or reads nothing for 10 s and then
// everything ("silent"); its socket buffers almost nothing (one message,
// the smallest TCP window). Side by side in one run, alternately:
//   - the scheduler's RSS, peak during the 10 s minus before the client
//     began (/proc/PID/status), and the replies it held back for the client
//     (/metrics: how many, and the most bytes held at once);
//   - another client's requests meanwhile (GetJobStatus every 10 ms): p50,
//     p99 and max latency;
//   - the replies the client then read: every one, in order, or those
//     before a disconnection it was told of (the reason, last), with none
//     missing or repeated before it.
//
//   build/bench/server/slow_watcher_bench [ROUNDS [one|jobs]]   (default 2 one)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "../../tests/integration/metrics_scrape.h"
#include "tailcut/client/client.h"
#include "tailcut/client/local_cluster.h"
#include "tailcut/common/log.h"
#include "tailcut/wire/wire.h"

namespace {

using namespace tailcut;
using Steady = std::chrono::steady_clock;

constexpr uint32_t kWatches = 1000, kTasks = 20000;
constexpr auto kSilence = std::chrono::seconds(10);

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "slow_watcher_bench: %s\n", why.c_str());
  std::exit(1);
}

double RssMb(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024;
  return 0;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// What the watching connection heard, per request (each request is one
// watch: a streaming submit or a Watch).
struct Heard {
  std::map<uint64_t, std::set<std::pair<JobId, uint32_t>>> results;  // (job, task) streamed to each watch
  std::map<uint64_t, int> finals;                                    // final statuses per watch
  uint64_t replies = 0;
  std::string problem;     // a result repeated or after its watch's final status, an error
  std::string disconnect;  // the scheduler's reason, if it disconnected the client

  void Take(const wire::ClientReply& r) {
    ++replies;
    const uint64_t w = r.request_id();
    if (r.has_error()) {
      if (w == 0 && r.error().message().find("disconnected by the scheduler") != std::string::npos)
        disconnect = r.error().message();
      else if (problem.empty())
        problem = "error: " + r.error().message();
    } else if (r.has_results()) {
      if (finals.count(w) && problem.empty()) problem = "a result after its final status";
      for (const auto& t : r.results().results())
        if (!results[w].insert({r.results().job_id(), t.task_index()}).second && problem.empty())
          problem = "a result repeated";
    } else if (r.has_status() && r.status().state() != wire::JOB_RUNNING) {
      ++finals[w];
    }
  }
  bool Done() const { return !disconnect.empty() || finals.size() == kWatches; }
  std::string Verdict(uint64_t expect_per_watch) const {
    if (!problem.empty()) return problem;
    if (!disconnect.empty())
      return "disconnected after " + std::to_string(replies - 1) + " replies, told why: " + disconnect.substr(0, 90);
    for (const auto& [w, n] : finals)
      if (n != 1) return "watch " + std::to_string(w) + ": " + std::to_string(n) + " final statuses";
    const auto first = results.find(1);
    const size_t got = first == results.end() ? 0 : first->second.size();
    if (got != expect_per_watch) return "watch 1: " + std::to_string(got) + " results";
    return "all, in order";
  }
};

struct Figures {
  double rss_before = 0, rss_peak = 0;
  double backlog_peak = 0, held = 0;
  double long_turns = 0;  // turns of the scheduler's loop over 10 ms of CPU during the 10 s (/metrics)  // the
                          // scheduler's held-back replies (/metrics): bytes at most, and how many
  std::vector<double> probe_ms;
  std::string verdict;  // what the watching client read
};

Figures RunOnce(bool silent, bool one_job) {
  LocalClusterOptions o;
  o.name = "slow-watcher-bench";
  o.keys = false;
  o.scheduler_binary = TAILCUT_SCHEDULER_BIN;
  o.executor_binary = TAILCUT_EXECUTOR_BIN;
  o.http = true;
  o.scheduler_flags = {"--log-level", "warn"};
  auto started = LocalCluster::Start(o);
  if (!started.ok()) Die(started.status().message());
  std::unique_ptr<LocalCluster> cluster = std::move(started).value();
  for (int i = 0; i < 2; ++i) {
    LocalExecutorSpec e;
    e.flags = {"--slots", "16", "--name", "bench-" + std::to_string(i), "--log-level", "warn"};
    if (auto added = cluster->AddExecutor(e); !added.ok()) Die(added.status().message());
  }
  if (Status s = cluster->WaitForExecutors(2, 30); !s.ok()) Die(s.message());
  const int pid = cluster->scheduler_pid();
  Client probe(cluster->client_options());
  auto first = probe.Submit(FanoutJob("sleep", "ms=600000", 1));  // a job to ask about, running throughout
  if (!first.ok()) Die(first.status().message());

  zmq::context_t ctx;
  zmq::socket_t watcher(ctx, zmq::socket_type::dealer);
  watcher.set(zmq::sockopt::linger, 0);
  // The worst case for the scheduler: almost nothing buffered on the client's
  // side (a one-message queue, the kernel's smallest receive buffer), so
  // what it does not read waits in the scheduler.
  watcher.set(zmq::sockopt::rcvhwm, 1);
  watcher.set(zmq::sockopt::rcvbuf, 2048);
  watcher.connect(cluster->client_endpoint());
  Figures f;
  f.rss_before = RssMb(pid);
  auto turns_over_10ms = [&] {
    auto m = testing::ScrapeMetrics(cluster->http_endpoint());
    return m["tailcut_loop_turn_cpu_seconds_count"] - m["tailcut_loop_turn_cpu_seconds_bucket{le=\"0.01\"}"];
  };
  const double long_before = turns_over_10ms();
  auto send = [&](uint64_t id, const auto& fill) {
    wire::ClientRequest req;
    req.set_version(kProtocolVersion);
    req.set_request_id(id);
    fill(req);
    watcher.send(ToFrame(req), zmq::send_flags::none);
  };
  auto streaming = [](uint32_t tasks) {
    wire::JobSpec job = FanoutJob("sleep", "ms=15", tasks);
    job.set_stream_results(true);
    return job;
  };
  if (one_job) {
    send(1, [&](wire::ClientRequest& r) { *r.mutable_submit()->mutable_job() = streaming(kTasks); });
    // Its id: the one reply it reads before the watches.
    JobId job = 0;
    zmq::pollitem_t item{watcher.handle(), 0, ZMQ_POLLIN, 0};
    zmq::message_t frame;
    wire::ClientReply r;
    if (zmq::poll(&item, 1, std::chrono::seconds(10)) > 0 && watcher.recv(frame, zmq::recv_flags::dontwait) &&
        FromFrame(frame, &r) && r.has_submitted())
      job = r.submitted().job_id();
    if (job == 0) Die("the streaming job did not appear");
    for (uint64_t id = 2; id <= kWatches; ++id)
      send(id, [&](wire::ClientRequest& r) { r.mutable_watch()->set_job_id(job); });
  } else {
    for (uint64_t id = 1; id <= kWatches; ++id)
      send(id, [&](wire::ClientRequest& r) { *r.mutable_submit()->mutable_job() = streaming(kTasks / kWatches); });
  }
  Heard heard;
  auto read_some = [&](int ms) {
    zmq::pollitem_t item{watcher.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(ms)) <= 0) return false;
    zmq::message_t frame;
    wire::ClientReply r;
    while (watcher.recv(frame, zmq::recv_flags::dontwait))
      if (FromFrame(frame, &r)) heard.Take(r);
    return true;
  };
  const auto start = Steady::now();
  while (Steady::now() - start < kSilence) {
    const auto t0 = Steady::now();
    auto st = probe.GetStatus(*first);
    if (!st.ok()) Die("probe: " + st.status().message());
    f.probe_ms.push_back(std::chrono::duration<double, std::milli>(Steady::now() - t0).count());
    f.rss_peak = std::max(f.rss_peak, RssMb(pid));
    if (f.probe_ms.size() % 50 == 0)  // every ~0.5 s
      f.backlog_peak =
          std::max(f.backlog_peak, testing::ScrapeMetrics(cluster->http_endpoint())["tailcut_client_backlog_bytes"]);
    if (silent)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    else
      read_some(10);
  }
  f.held = testing::ScrapeMetrics(cluster->http_endpoint())["tailcut_client_replies_held_total"];
  f.long_turns = turns_over_10ms() - long_before;
  // Now it reads: everything it should have, until every job's final status.
  const auto deadline = Steady::now() + std::chrono::seconds(300);
  while (!heard.Done() && Steady::now() < deadline) read_some(100);
  while (read_some(1000)) {  // anything after the reason
  }
  f.verdict = heard.Done() ? heard.Verdict(one_job ? kTasks : kTasks / kWatches)
                           : "only " + std::to_string(heard.finals.size()) + " final statuses";
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  SetLogLevel(LogLevel::kWarn);
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 2;
  const bool one_job = argc <= 2 || std::string(argv[2]) != "jobs";
  std::printf("1,000 watches of %s, %u tasks of sleep ms=15 on 32 slots\n", one_job ? "one job" : "1,000 jobs", kTasks);
  std::printf("%-7s %5s %8s %8s %8s %10s %8s %8s %8s %10s  %s\n", "client", "round", "rss_mb", "cost_mb", "held",
              "backlog_kb", "p50_ms", "p99_ms", "max_ms", "turns>10ms", "replies");
  for (int round = 1; round <= rounds; ++round) {
    for (bool silent : {false, true}) {
      Figures f = RunOnce(silent, one_job);
      std::printf("%-7s %5d %8.1f %8.1f %8.0f %10.0f %8.2f %8.2f %8.2f %10.0f  %s\n", silent ? "silent" : "reads",
                  round, f.rss_before, f.rss_peak - f.rss_before, f.held, f.backlog_peak / 1024,
                  Percentile(f.probe_ms, 0.5), Percentile(f.probe_ms, 0.99), Percentile(f.probe_ms, 1.0), f.long_turns,
                  f.verdict.c_str());
      std::fflush(stdout);
    }
  }
}
