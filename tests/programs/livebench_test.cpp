// `tailcut bench` end to end, kept small (a few seconds): one policy, few jobs.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <string>

#include "live.h"
#include "tailcut/common/random.h"
#include "tailcut/common/stats.h"
#include "tailcut/sim/whatif.h"

using namespace tailcut;
using namespace tailcut::sim;

namespace {

Scenario Small(const std::string& extra = "") {
  auto cfg = Config::Parse(R"(
name = "live-test"
seed = 3
[core]
policy_interval_s = 0.05
[live]
executors = 2
slots = 2
kernel = "sleep"
task_ms = 10
sigma = 0.2
jobs = 8
tasks_per_job = 4
)" + extra);
  REQUIRE(cfg.ok());
  auto sc = ParseScenario(std::move(cfg).value(), ".");
  REQUIRE(sc.ok());
  return std::move(sc).value();
}

std::string RunCli(const std::string& args) {
  std::string cmd = std::string(TAILCUT_CLI_BIN) + " bench " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = pclose(p);
  CHECK(rc == 0);
  return out;
}

}  // namespace

TEST_CASE("live bench: one policy on real executors finishes every job", "[live]") {
  Scenario sc = Small();
  LiveOptions o;
  o.executor_path = TAILCUT_EXECUTOR_BIN;
  o.progress = false;
  auto r = RunLivePolicy(sc, "none", o);
  REQUIRE(r.ok());
  CHECK(r->policy == "none");
  CHECK(r->jobs == 8);
  CHECK(r->unfinished == 0);
  CHECK(r->failed == 0);
  CHECK(r->tasks == 32);
  CHECK(r->attempts >= 32);
  CHECK(r->copies == 0);
  REQUIRE(r->latencies.size() == 8);
  for (double l : r->latencies) CHECK(std::isfinite(l));
  // Each job is at least one 10 ms task long (median; sigma 0.2).
  CHECK(r->p50 > 0.005);
  CHECK(r->p50 < 2.0);
  CHECK(r->p50 <= r->p99);
  CHECK(r->committed_s > 0.1);
  CHECK(r->extra_work >= 0);
}

TEST_CASE("live bench: a crashed executor's work is rescheduled", "[live]") {
  // Closed loop, 2 jobs x 4 tasks in flight on 4 slots: the crashed
  // executor always holds attempts, which are lost and run again.
  Scenario sc = Small("crash_executor = 1\ncrash_at_s = 0.1\nlost_after_s = 0.5\narrival = \"closed\"\n");
  LiveOptions o;
  o.executor_path = TAILCUT_EXECUTOR_BIN;
  o.progress = false;
  o.jobs = 40;
  auto r = RunLivePolicy(sc, "none", o);
  REQUIRE(r.ok());
  CHECK(r->jobs == 40);
  CHECK(r->unfinished == 0);
  CHECK(r->attempts > r->tasks);  // the lost attempts ran again
  // A job waited for the loss to be detected. Not "> lost_after_s": the
  // executor's last heartbeat may predate the job's submit (by more on a
  // loaded machine), so the wait can be shorter than lost_after_s.
  CHECK(r->p999 > 2 * r->p50);
}

TEST_CASE("tailcut bench --json prints the keys of tailcut sim --json", "[live][cli]") {
  std::string out = RunCli(std::string(TAILCUT_SOURCE_DIR) + "/configs/scenarios/small_live.toml --policy none --jobs 6 --json");
  for (const char* key : {"\"policy\": \"none\"", "\"jobs\": 6", "\"mean\"", "\"p50\"", "\"p90\"", "\"p99\"",
                          "\"p999\"", "\"extra_work\"", "\"copies\"", "\"failed\"", "\"unfinished\": 0", "\"tasks\"",
                          "\"attempts\"", "\"virtual_s\"", "\"events\"", "\"wall_s\"", "\"extra_machine\": 0,",
                          "\"bound_p50\"", "\"p99_x_bound\"", "\"policy\": \"bound\""})
    CHECK(out.find(key) != std::string::npos);
}

TEST_CASE("the live bound replays the bench's arrivals on the [live] model without delays", "[live]") {
  // Random delays of 1 s on every attempt would dominate any real run; the
  // bound removes them, and the fail-slow executor it leaves idle.
  Scenario sc = Small("delay_prob = 1.0\ndelay_ms = 1000\nfail_slow_executor = 0\nfail_slow_factor = 50\n");
  LiveOptions o;
  o.seed = 5;
  SimResult b = LiveBound(sc, o);
  CHECK(b.jobs == 8);
  CHECK(b.unfinished == 0);
  CHECK(b.tasks == 32);
  CHECK(b.p99 < 0.2);   // 4 tasks of ~10 ms on 2 healthy slots, not 1 s delays or 50x
  CHECK(b.p50 > 0.005);
  o.jobs = 3;
  CHECK(LiveBound(sc, o).jobs == 3);
}

TEST_CASE("tailcut bench prints sim's table", "[live][cli]") {
  std::string out = RunCli(std::string(TAILCUT_SOURCE_DIR) + "/configs/scenarios/small_live.toml --policy none --jobs 4");
  CHECK(out.find("POLICY") != std::string::npos);
  CHECK(out.find("P99_S") != std::string::npos);
  CHECK(out.find("EXTRA_%") != std::string::npos);
  CHECK(out.find("none") != std::string::npos);
}

TEST_CASE("live bench --trace records every task and whatif names the fail-slow executor", "[live][whatif]") {
  Scenario sc = Small("fail_slow_executor = 1\nfail_slow_factor = 5\n");
  LiveOptions o;
  o.executor_path = TAILCUT_EXECUTOR_BIN;
  o.progress = false;
  o.trace_path = "livebench_trace_test.csv";
  auto r = RunLivePolicy(sc, "none", o);
  REQUIRE(r.ok());
  REQUIRE(r->unfinished == 0);
  auto rows = ReadTraceCsv(o.trace_path);
  REQUIRE(rows.ok());
  CHECK(rows->size() == 8 * 4);  // one committed attempt per task
  // The trace's comments say which scheduler id is the fail-slow executor.
  std::FILE* f = std::fopen(o.trace_path.c_str(), "r");
  REQUIRE(f != nullptr);
  char line[256];
  std::string slow_id;
  while (std::fgets(line, sizeof line, f))
    if (std::string s = line; s.rfind("# executor ", 0) == 0 && s.find("fail-slow") != std::string::npos)
      slow_id = s.substr(11, s.find(' ', 11) - 11);
  std::fclose(f);
  REQUIRE_FALSE(slow_id.empty());
  WhatifOptions w;
  w.policy = "";
  auto rep = AnalyseTrace(*rows, o.trace_path, w);
  REQUIRE(rep.ok());
  REQUIRE_FALSE(rep->by_executor.empty());
  CHECK(rep->by_executor[0].name == slow_id);
  CHECK(rep->by_executor[0].saved_mean > 0);
  std::remove(o.trace_path.c_str());
}

namespace {
SimResult WithLatencies(const std::string& policy, uint64_t seed, size_t n, double mean) {
  SimResult r;
  r.policy = policy;
  Rng rng(seed);
  for (size_t i = 0; i < n; ++i) r.latencies.push_back(rng.Exp(mean));
  r.jobs = n;
  Summarise(&r);
  return r;
}
std::string Intervals(const std::vector<SimResult>& results) {
  std::FILE* f = std::tmpfile();
  PrintIntervals(f, results, 2);
  std::rewind(f);
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;) text += static_cast<char>(c);
  std::fclose(f);
  return text;
}
}  // namespace

TEST_CASE("bench rounds merge into one result, and a claim against none is made only where the interval says so") {
  SimResult a = WithLatencies("default", 1, 600, 1.0);
  MergeRound(&a, WithLatencies("default", 2, 600, 1.0));
  CHECK(a.jobs == 1200);
  CHECK(a.latencies.size() == 1200);
  CHECK(a.p99 == QuantileOf(a.latencies, 0.99));
  const SimResult none = WithLatencies("none", 3, 1200, 1.0);
  std::string same = Intervals({none, a});
  CHECK(same.find("p99 not told from none") != std::string::npos);
  CHECK(same.find("better than none") == std::string::npos);
  CHECK(same.find("note:") == std::string::npos);  // 1,200 jobs: enough for a p99
  std::string half = Intervals({none, WithLatencies("default", 4, 1200, 0.5)});
  CHECK(half.find("p50 better than none; p99 better than none") != std::string::npos);
  std::string few = Intervals({WithLatencies("none", 5, 100, 1.0), WithLatencies("default", 6, 100, 1.0)});
  CHECK(few.find("a p99 over 100 jobs rests on its 2 slowest") != std::string::npos);
}
