// tailcut demo: a whole local cluster in one command.
//
// Starts a scheduler (in this process) and executor daemons (child
// processes, one of them fail-slow), runs fan-out jobs and prints the
// per-executor and per-job timings that show the straggler.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <thread>

#include "commands.h"
#include "tailcut/client/client.h"
#include "tailcut/client/local_cluster.h"
#include "tailcut/common/clock.h"
#include "tailcut/common/log.h"
#include "tailcut/common/process.h"
#include "tailcut/common/stats.h"
#include "tailcut/policies/registry.h"
#include "tailcut/server/server.h"
#include "tailcut/sim/replay.h"

namespace tailcut::cli {
namespace {

struct PhaseResult {
  std::vector<double> job_walls;
  uint32_t copies = 0;
  bool ok = true;
};

struct DemoSettings {
  int executors, slots, tasks, jobs, runs;
  bool tables = true;  // the per-job and per-executor tables (first run)
  double task_ms, slow;
  std::filesystem::path exe;
  bool keep_logs;
};

// One cluster under one policy chain: start it, run the jobs, print the
// per-job and per-executor tables, stop it.
PhaseResult RunPhase(const DemoSettings& d, const std::string& policy) {
  PhaseResult out;
  auto chain =
      MakePolicyChain(policy, Config(), sim::LivePolicyServices(Config()));  // `default` replays as the daemon does
  if (!chain.ok()) {
    std::fprintf(stderr, "tailcut demo: %s\n", chain.status().message().c_str());
    out.ok = false;
    return out;
  }
  LocalClusterOptions lo;
  lo.name = "demo";
  lo.server.heartbeat_ms = 100;
  lo.server.core.lost_after_s = 1.0;
  lo.executor_binary = d.exe.string();
  lo.keep_logs = d.keep_logs;
  auto cluster = LocalCluster::Start(lo, std::move(chain).value());
  if (!cluster.ok()) {
    std::fprintf(stderr, "tailcut demo: %s\n", cluster.status().message().c_str());
    out.ok = false;
    return out;
  }
  LocalCluster& c = **cluster;
  if (d.tables)
    std::printf("\n== policy: %s ==  (scheduler %s, %d executors x %d slots, executor %d fail-slow %.0fx)\n",
                policy.c_str(), c.client_endpoint().c_str(), d.executors, d.slots, d.executors, d.slow);
  for (int i = 1; i <= d.executors; ++i) {
    LocalExecutorSpec e;
    e.flags = {"--slots", std::to_string(d.slots), "--name", "demo-" + std::to_string(i), "--log-level", "warn"};
    if (i == d.executors)
      e.flags.insert(e.flags.end(), {"--fail-slow-after", "0", "--fail-slow-factor", std::to_string(d.slow)});
    (void)c.AddExecutor(e);
  }
  if (Status s = c.WaitForExecutors(d.executors, 15); !s.ok()) {
    std::fprintf(stderr, "tailcut demo: %s\n", s.message().c_str());
    out.ok = false;
    return out;
  }

  Client client(c.client_options());
  SteadyClock clock;
  std::map<uint64_t, std::string> names;  // executor id -> name
  if (auto list = client.Executors(); list.ok())
    for (auto& e : *list) names[e.executor_id()] = e.name();

  std::map<uint64_t, std::vector<double>> per_exec;
  if (d.tables) std::printf("%-6s %6s %7s %9s %9s %9s\n", "JOB", "TASKS", "COPIES", "WALL(s)", "p50(ms)", "max(ms)");
  for (int j = 1; j <= d.jobs; ++j) {
    wire::JobSpec spec = FanoutJob("sleep", "ms=" + std::to_string(d.task_ms) + " sigma=0.2 seed=" + std::to_string(j),
                                   static_cast<uint32_t>(d.tasks));
    spec.set_name("demo-fanout-" + std::to_string(j));
    spec.set_stream_results(true);
    double t0 = clock.Now();
    auto id = client.Submit(spec);
    if (!id.ok()) {
      std::fprintf(stderr, "tailcut demo: submit failed: %s\n", id.status().message().c_str());
      out.ok = false;
      break;
    }
    std::vector<double> runs;
    WaitOptions w;
    w.on_result = [&](const wire::TaskResult& r) {
      runs.push_back(r.run_s());
      per_exec[r.executor_id()].push_back(r.run_s());
    };
    auto st = client.Wait(*id, w);
    double wall = clock.Now() - t0;
    if (!st.ok() || st->state() != wire::JOB_SUCCEEDED) {
      std::fprintf(stderr, "tailcut demo: job %d did not succeed: %s\n", j,
                   st.ok() ? st->reason().c_str() : st.status().message().c_str());
      out.ok = false;
      break;
    }
    out.job_walls.push_back(wall);
    out.copies += st->copies();
    if (d.tables)
      std::printf("%-6d %6d %7u %9.3f %9.1f %9.1f\n", j, d.tasks, st->copies(), wall, QuantileOf(runs, 0.5) * 1e3,
                  QuantileOf(runs, 1.0) * 1e3);
  }

  if (!d.tables) return out;
  std::vector<double> medians;
  for (auto& [id, v] : per_exec) medians.push_back(QuantileOf(v, 0.5));
  double fleet = QuantileOf(medians, 0.5);
  std::printf("%-10s %6s %9s %9s %9s\n", "EXECUTOR", "TASKS", "p50(ms)", "p99(ms)", "max(ms)");
  for (auto& [id, v] : per_exec) {
    double p50 = QuantileOf(v, 0.5);
    std::printf("%-10s %6zu %9.1f %9.1f %9.1f%s\n", names[id].c_str(), v.size(), p50 * 1e3, QuantileOf(v, 0.99) * 1e3,
                QuantileOf(v, 1.0) * 1e3, p50 > 2 * fleet ? "   <- straggler (fail-slow)" : "");
  }
  return out;
}

int RunDemo(const Args& a) {
  DemoSettings d;
  d.executors = static_cast<int>(a.Int("--executors", 4, 2, 64));
  d.slots = static_cast<int>(a.Int("--slots", 4, 1, 1024));
  d.tasks = static_cast<int>(a.Int("--tasks", 16, 1, 1000000));
  d.jobs = static_cast<int>(a.Int("--jobs", 10, 1, 100000));
  d.task_ms = a.Double("--task-ms", 40, 1, 3.6e6);
  d.slow = a.Double("--slow-factor", 5, 1, 1000);
  d.runs = static_cast<int>(a.Int("--runs", 3, 1, 1000));
  if (!a.error().empty()) {
    std::fprintf(stderr, "tailcut demo: %s\n", a.error().c_str());
    return kExitUsage;
  }
  d.keep_logs = a.Has("--keep-logs");
  d.exe = ExecutableDir() / "tailcut-executor";
  if (!std::filesystem::exists(d.exe)) {
    std::fprintf(stderr, "tailcut demo: %s not found (build all targets: cmake --build build)\n", d.exe.c_str());
    return kExitUsage;
  }
  // The scheduler runs in this process: warnings only, to keep the demo's
  // output readable; --debug shows its decisions (copies, restarts, health).
  SetLogLevel(a.Has("--debug") ? LogLevel::kDebug : LogLevel::kWarn);
  std::printf("tailcut demo: %d fan-out jobs of %d sleep tasks (%.0f ms median), first without mitigation,\n"
              "then with the default policy chain.\n",
              d.jobs, d.tasks, d.task_ms);
  // Interleaved, run by run: a drift of the machine's load falls on both.
  const std::vector<std::string> policies = {"none", "default"};
  std::map<std::string, std::vector<double>> maxima, walls;
  std::map<std::string, uint32_t> copies;
  for (int run = 0; run < d.runs; ++run) {
    d.tables = run == 0;
    for (const std::string& policy : policies) {
      PhaseResult r = RunPhase(d, policy);
      if (!r.ok) return kExitFailed;
      maxima[policy].push_back(QuantileOf(r.job_walls, 1.0));
      walls[policy].insert(walls[policy].end(), r.job_walls.begin(), r.job_walls.end());
      copies[policy] += r.copies;
    }
    if (d.runs > 1)
      std::fprintf(stderr, "demo: run %d of %d: job wall max none %.3f s, default %.3f s\n", run + 1, d.runs,
                   maxima["none"].back(), maxima["default"].back());
  }
  std::printf(
      "\n%d run%s, interleaved; job wall max: the median of the runs' maxima [95%% bootstrap interval] "
      "and their range\n",
      d.runs, d.runs == 1 ? "" : "s");
  std::printf("%-10s %14s %32s %20s %8s\n", "POLICY", "JOB WALL p50", "JOB WALL max, median [CI]", "max range",
              "COPIES");
  for (const std::string& p : policies) {
    const std::vector<double>& m = maxima[p];
    Interval ci = BootstrapQuantile(m, 0.5);
    std::printf("%-10s %13.3fs %13.3fs [%.3f, %.3f] %9.3f-%.3fs %8u\n", p.c_str(), QuantileOf(walls[p], 0.5),
                QuantileOf(m, 0.5), ci.lo, ci.hi, QuantileOf(m, 0.0), QuantileOf(m, 1.0), copies[p]);
  }
  int below = 0;
  for (int run = 0; run < d.runs; ++run) below += maxima["default"][run] < maxima["none"][run];
  std::printf("default's job wall max below none's in %d of %d runs\n", below, d.runs);
  // Per job (issue 39): each job (its own seed) under `default` against the
  // same job under `none` in the same run.
  const std::vector<double>& none = walls["none"];
  const std::vector<double>& def = walls["default"];
  size_t slower = 0, worst = 0;
  for (size_t i = 0; i < none.size() && i < def.size(); ++i) {
    slower += def[i] > 1.1 * none[i];
    if (def[i] / none[i] > def[worst] / none[worst]) worst = i;
  }
  if (!none.empty() && !def.empty())
    std::printf(
        "per job, default / none in the same run: %zu of %zu jobs more than 10%% slower; worst %.2fx (run %zu "
        "job %zu)\n",
        slower, none.size(), def[worst] / none[worst], worst / d.jobs + 1, worst % d.jobs + 1);
  return kExitOk;
}

}  // namespace

Command DemoCommand() {
  Command c;
  c.name = "demo";
  c.summary = "start a local scheduler and 4 executors (one fail-slow), run a fan-out job, print timings";
  c.description =
      "Starts a local scheduler and executor daemons (one of them fail-slow), runs fan-out jobs of sleep tasks, and "
      "prints per-executor and per-job timings: once with no mitigation, once with the default policy chain. Needs "
      "nothing else running; takes about 5-30 s.";
  c.flags = {
      {"--executors", "N", "executor daemons (default 4; the last one is fail-slow)"},
      {"--slots", "N", "slots per executor (default 4)"},
      {"--tasks", "N", "tasks per job (default 16)"},
      {"--jobs", "N", "jobs, run one after another (default 10)"},
      {"--task-ms", "MS", "median task time (default 40)"},
      {"--slow-factor", "F", "the fail-slow executor's slowdown (default 5)"},
      {"--runs", "N",
       "runs of both policies, interleaved (none, default, none, ...; default 3): the summary gives each policy's "
       "job wall max per run, their median with a 95% bootstrap interval, and in how many runs default's max was "
       "below none's, then how many jobs ran more than 10% slower under default than the same job under none in "
       "the same run, and the worst ratio. Tables are printed for the first run only."},
      {"--keep-logs", "", "keep the executors' log files (printed at the end)"},
      {"--debug", "", "log the in-process scheduler's decisions (copies, restarts, executor health) on stderr"},
  };
  c.run = RunDemo;
  return c;
}

}  // namespace tailcut::cli
