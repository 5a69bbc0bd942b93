// Simulator mechanics: determinism, faults, delays, trace replay, scenario
// files, outputs.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "sim_helpers.h"
#include "tailcut/policies/registry.h"
#include "tailcut/sim/command.h"
#include "tailcut/sim/random.h"

namespace tailcut::sim {
namespace {

using testing::Run;
using testing::ScenarioFile;
using testing::ScenarioFrom;

const char kSmall[] = R"(
[cluster]
executors = 8
slots = 2
network = { dist = "exp", mean = 0.01 }
[workload]
arrival = "poisson"
rate = 0.5
jobs = 300
[[workload.class]]
tasks = { dist = "uniform", min = 1, max = 20 }
task_time = { dist = "lognormal", median = 1.0, sigma = 0.8, straggler_p = 0.05, straggler_factor = 6 }
)";

TEST_CASE("same seed gives same metrics and another seed other metrics") {
  Scenario sc = ScenarioFrom(kSmall);
  SimResult a = Run(sc, {}, 7), b = Run(sc, {}, 7), c = Run(sc, {}, 8);
  REQUIRE(a.jobs == 300);
  CHECK(a.latencies == b.latencies);
  CHECK(a.mean == b.mean);
  CHECK(a.p999 == b.p999);
  CHECK(a.machine_s == b.machine_s);
  CHECK(a.events == b.events);
  CHECK(a.latencies != c.latencies);
}

TEST_CASE("distributions have the means they claim") {
  Rng rng(3);
  auto mean_of = [&](const Distribution& d) {
    double s = 0;
    const int n = 400000;
    for (int i = 0; i < n; ++i) s += d.Sample(rng);
    return s / n;
  };
  Distribution d;
  d.kind = Distribution::Kind::kExp;
  d.mean = 2;
  CHECK(mean_of(d) == Approx(d.Mean()).epsilon(0.01));
  d.kind = Distribution::Kind::kShiftedExp;
  d.shift = 1;
  CHECK(mean_of(d) == Approx(d.Mean()).epsilon(0.01));
  d.kind = Distribution::Kind::kPareto;
  d.scale = 1;
  d.alpha = 3.5;
  CHECK(mean_of(d) == Approx(d.Mean()).epsilon(0.01));
  d.kind = Distribution::Kind::kLognormal;
  d.median = 1;
  d.sigma = 0.5;
  CHECK(mean_of(d) == Approx(d.Mean()).epsilon(0.01));
  d.kind = Distribution::Kind::kUniform;
  d.min = 2;
  d.max = 4;
  d.straggler_p = 0.1;
  d.straggler_factor = 5;
  CHECK(mean_of(d) == Approx(d.Mean()).epsilon(0.01));
}

TEST_CASE("network delay: launch and result each take one delay") {
  Scenario sc = ScenarioFrom(R"(
[cluster]
executors = 1
network = 0.1
[workload]
arrival = "closed"
jobs = 3
[[workload.class]]
tasks = 1
task_time = 1.0
)");
  SimResult r = Run(sc);
  REQUIRE(r.jobs == 3);
  for (double l : r.latencies) CHECK(l == Approx(1.2));
  CHECK(r.machine_s == Approx(3.0));
}

TEST_CASE("fail-slow onset stretches the rest of a running attempt") {
  Scenario sc = ScenarioFrom(R"(
[cluster]
executors = 1
[[cluster.fail_slow]]
executor = 0
at_s = 5
factor = 3
duration_s = 9
[workload]
arrival = "closed"
jobs = 2
[[workload.class]]
tasks = 1
task_time = 10.0
)");
  SimResult r = Run(sc);
  REQUIRE(r.latencies.size() == 2);
  // 5 s healthy, then 5 s of work at 3x = 15 s: done at 20 (slow ends at 14,
  // by then 3 s of work are done, the last 2 run at 1x: done at 16).
  CHECK(r.latencies[0] == Approx(16.0));
  CHECK(r.latencies[1] == Approx(10.0));
}

TEST_CASE("crashed executor attempts vanish and the core reschedules them so every job completes") {
  Scenario sc = ScenarioFile("executor_crash.toml");
  SimResult r = Run(sc);
  CHECK(r.jobs == sc.workload.jobs);
  CHECK(r.failed == 0);
  CHECK(r.unfinished == 0);
  // A crash mid-task: 3 executors, the one running task 0 dies at 0.5 s,
  // detection 1 s later, the task reruns on the idle third executor.
  Scenario small = ScenarioFrom(R"(
[cluster]
executors = 3
[[cluster.crash]]
executor = 0
at_s = 0.5
detect_s = 1.0
[workload]
arrival = "closed"
jobs = 1
[[workload.class]]
tasks = 2
task_time = 2.0
)");
  SimResult s = Run(small);
  REQUIRE(s.jobs == 1);
  CHECK(s.failed == 0);
  CHECK(s.latencies[0] == Approx(1.5 + 2.0));
  CHECK(s.machine_s == Approx(0.5 + 2.0 + 2.0));
}

TEST_CASE("with heartbeats the core itself detects a crash") {
  Scenario sc = ScenarioFrom(R"(
[core]
lost_after_s = 1.0
policy_interval_s = 0.1
[cluster]
executors = 3
[[cluster.crash]]
executor = 0
at_s = 0.5
[workload]
arrival = "closed"
jobs = 1
[[workload.class]]
tasks = 2
task_time = 2.0
)");
  SimResult r = Run(sc);
  REQUIRE(r.jobs == 1);
  CHECK(r.failed == 0);
  // Last heartbeat at 0.4 s; lost once silence exceeds 1 s (tick at 1.5 s).
  CHECK(r.latencies[0] == Approx(1.5 + 2.0).margin(0.15));
}

TEST_CASE("fail-slow executor raises p99 over healthy under no policy and speed-blind placement") {
  // expected_finish placement keeps work off the slow executor even under
  // `none` (tests/core/placement_expected_finish_test.cpp); the
  // scenario's effect shows on a scheduler blind to speed.
  Scenario healthy_sc = ScenarioFile("healthy.toml"), slow_sc = ScenarioFile("fail_slow.toml");
  healthy_sc.core.placement = slow_sc.core.placement = "first_free";
  SimResult healthy = Run(healthy_sc);
  SimResult slow = Run(slow_sc);
  REQUIRE(healthy.jobs == slow.jobs);
  INFO("healthy p99 " << healthy.p99 << ", fail-slow p99 " << slow.p99);
  CHECK(slow.p99 > 1.5 * healthy.p99);
}

TEST_CASE("quorum rounds close at k reports or at the deadline") {
  SimResult r = Run(ScenarioFile("federated.toml"));
  CHECK(r.jobs == 300);
  CHECK(r.unfinished == 0);
  CHECK(r.p999 <= 60.0 + 0.5 + 1e-9);  // deadline, checked every policy interval
  CHECK(r.extra_work > 0);  // over-selected clients were cancelled
}

TEST_CASE("every scenario file loads and unknown keys are errors") {
  for (const char* f : {"healthy.toml", "random_stragglers.toml", "fail_slow.toml", "heavy_tail.toml",
                        "executor_crash.toml", "job_mix.toml", "federated.toml", "datacenter.toml"}) {
    INFO(f);
    Scenario sc = ScenarioFile(f);
    CHECK(sc.live.executors > 0);
  }
  Scenario dc = ScenarioFile("datacenter.toml");
  CHECK(dc.cluster.executors == 10000);
  CHECK(dc.workload.tasks == 1000000);
  auto cfg = Config::Parse("[cluster]\nexecutorz = 3\n", "typo");
  REQUIRE(cfg.ok());
  auto bad = ParseScenario(std::move(cfg).value(), ".");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("cluster.executorz") != std::string::npos);
  // Policy tables are read by their policies: known keys pass, typos do not.
  auto pol = Config::Parse("[policies.spark]\nquantile = 0.75\n", "p");
  CHECK(ParseScenario(std::move(pol).value(), ".").ok());
  auto pol_typo = Config::Parse("[policies.spark]\nquantil = 0.75\n", "p");
  CHECK_FALSE(ParseScenario(std::move(pol_typo).value(), ".").ok());
}

TEST_CASE("trace replay: recorded durations on the listed executor, job's median elsewhere") {
  std::string path = "sim_test_trace.csv";
  {
    std::ofstream f(path);
    f << "job,task,executor,start,end,task_class,input_size,straggler,fail_slow\n"
      << "7,0,4,100,101,map,10,0,0\n"
      << "7,1,1,100,103,map,10,0,0\n"
      << "7,2,2,100,102,map,10,0,0\n"
      << "3,0,3,110,111.5,reduce,5,0,0\n";
  }
  auto trace = LoadTraceCsv(path);
  REQUIRE(trace.ok());
  REQUIRE(trace->size() == 2);
  CHECK((*trace)[0].submit == 0);
  CHECK((*trace)[1].submit == 10);
  CHECK((*trace)[0].tasks[1].duration == 3);
  Scenario sc = ScenarioFrom("[cluster]\nexecutors = 4\n[workload]\narrival = \"trace\"\ntrace = \"" + path + "\"\n");
  SimResult r = Run(sc);
  std::remove(path.c_str());
  REQUIRE(r.jobs == 2);
  CHECK(r.latencies[0] == Approx(3.0));
  CHECK(r.latencies[1] == Approx(1.5));
  CHECK(r.tasks == 4);
}

TEST_CASE("trace errors name the file and line (the predictors' parser)") {
  std::string path = "sim_test_bad_trace.csv";
  {
    std::ofstream f(path);
    f << "job,task,executor,start,end,task_class\n1,0,1,5,4,map\n";
  }
  auto trace = LoadTraceCsv(path);
  std::remove(path.c_str());
  REQUIRE_FALSE(trace.ok());
  CHECK(trace.status().message() == path + ":2: end < start");
}

// Speculates once on every attempt that has run for `after_s`.
class CopyAfter final : public MitigationPolicy {
 public:
  explicit CopyAfter(double after_s) : after_s_(after_s) {}
  std::string_view name() const override { return "test-copy"; }
  void OnTick(const ClusterView& v, std::vector<Proposal>* out) override {
    v.ForEachRunningAttempt([&](const AttemptView& a) {
      if (a.started >= 0 && a.task_live == 1 && v.Now() - a.started >= after_s_)
        out->push_back(Proposal::LaunchCopy(a.job, a.task, "test"));
    });
  }

 private:
  double after_s_;
};

TEST_CASE("a speculative copy that loses is cancelled and its run counts as extra work") {
  Scenario sc = ScenarioFrom(R"(
[core]
policy_interval_s = 0.5
redundancy_budget = 1.0
[cluster]
executors = 2
[workload]
arrival = "closed"
jobs = 1
[[workload.class]]
tasks = 1
task_time = 10.0
)");
  PolicyChain chain;
  chain.push_back(std::make_unique<CopyAfter>(1.0));
  SimResult r = Run(sc, std::move(chain));
  REQUIRE(r.jobs == 1);
  CHECK(r.copies == 1);
  CHECK(r.attempts == 2);
  CHECK(r.latencies[0] == Approx(10.0));
  // The copy started at t = 1 and was stopped when the original won at 10.
  CHECK(r.committed_s == Approx(10.0));
  CHECK(r.machine_s == Approx(19.0));
  CHECK(r.extra_work == Approx(0.9));
}

TEST_CASE("policy entries split on commas and chain on plus and outputs") {
  CHECK(SplitPolicyList("none, spark ,clone+spark,") == std::vector<std::string>{"none", "spark", "clone+spark"});
  Scenario sc = ScenarioFrom(kSmall);
  auto none = RunPolicy(sc, "none", 1);
  REQUIRE(none.ok());
  CHECK(none->policy == "none");
  auto chained = RunPolicy(sc, "none+default", 1);
  REQUIRE(chained.ok());
  CHECK(RunPolicy(sc, "no-such-policy", 1).status().code() == Status::Code::kInvalidArgument);
  std::vector<SimResult> rs{*none, *chained};
  std::string json = ResultsJson(rs);
  for (const char* key : {"\"policy\"", "\"jobs\"", "\"mean\"", "\"p50\"", "\"p90\"", "\"p99\"", "\"p999\"",
                          "\"extra_work\"", "\"copies\""})
    CHECK(json.find(key) != std::string::npos);
  std::string svg = CdfSvg(rs, "t");
  CHECK(svg.rfind("<svg", 0) == 0);
  size_t lines = 0;
  for (size_t p = svg.find("<polyline"); p != std::string::npos; p = svg.find("<polyline", p + 1)) ++lines;
  CHECK(lines == 2);
  CHECK(svg.find("none+default") != std::string::npos);
}

}  // namespace
}  // namespace tailcut::sim

namespace tailcut::sim {

// Speed-proportional work (docs/JOBS.md, docs/TRAINING.md): with one
// fail-slow worker and no policy, steps whose work the core shares out by
// measured speed finish far sooner than equal steps, with no copies.
TEST_CASE("speed shares: divisible steps sized by speed beat equal steps with a fail-slow worker") {
  auto sc = LoadScenario(TAILCUT_SOURCE_DIR "/configs/scenarios/speed_shares.toml");
  REQUIRE(sc.ok());
  sc->workload.jobs = 150;
  Scenario divisible = *sc;
  for (JobClass& c : divisible.workload.classes) c.divisible = true;
  Scenario plain = *sc;  // placed first free: every worker takes its equal step
  plain.core.placement = "first_free";
  auto equal = RunPolicy(plain, "none", 1);
  auto held = RunPolicy(*sc, "none", 1);  // expected_finish: the slow worker's task may wait for a fast one
  auto shared = RunPolicy(divisible, "none", 1);
  REQUIRE(equal.ok());
  REQUIRE(held.ok());
  REQUIRE(shared.ok());
  CHECK(shared->jobs == equal->jobs);
  CHECK(shared->tasks == equal->tasks);
  CHECK(shared->failed == 0);
  CHECK(shared->copies == 0);
  CHECK(shared->extra_work == 0);
  // Equal steps wait for the 4x worker (~4 s); shared ones take ~1.1-1.3 s.
  CHECK(shared->p50 < 0.5 * equal->p50);
  CHECK(shared->mean < 0.5 * equal->mean);
  // Holding equal steps off the slow worker runs them in two rounds on the
  // fast ones (~2 s); shares keep all eight busy.
  CHECK(shared->p50 < 0.8 * held->p50);
  CHECK(shared->mean < 0.8 * held->mean);
}

}  // namespace tailcut::sim
