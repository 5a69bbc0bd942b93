// The clairvoyant bound and extra_machine (docs/benchmarks/tail.md, "The
// clairvoyant bound"): all in virtual time, so every comparison is exact.
#include <cmath>
#include <string>
#include <vector>

#include "sim_helpers.h"
#include "tailcut/sim/clairvoyant.h"
#include "tailcut/sim/command.h"

namespace tailcut::sim {
namespace {

using testing::Run;
using testing::ScenarioFrom;

SimResult Bound(const Scenario& sc, uint64_t seed = 1) {
  BoundOptions o;
  o.seed = seed;
  return ClairvoyantBound(sc, o);
}

TEST_CASE("without stragglers and contention the bound is the run itself, job by job") {
  // 40 slots, ~2 busy on average: no task ever waits, so the core's
  // placement order cannot matter.
  Scenario sc = ScenarioFrom(R"(
[cluster]
executors = 20
slots = 2
network = { dist = "constant", value = 0.001 }
[workload]
arrival = "poisson"
rate = 0.5
jobs = 300
[[workload.class]]
tasks = 4
task_time = { dist = "exp", mean = 1.0 }
)");
  SimResult none = Run(sc);
  SimResult b = Bound(sc);
  REQUIRE(b.jobs == 300);
  REQUIRE(b.unfinished == 0);
  REQUIRE(b.latencies.size() == none.latencies.size());
  for (size_t i = 0; i < b.latencies.size(); ++i) CHECK(b.latencies[i] == Approx(none.latencies[i]).margin(1e-9));
  CHECK(b.machine_s == Approx(none.machine_s).epsilon(1e-9));
  CHECK(b.tasks == none.tasks);
  CHECK(b.attempts == none.tasks);
}

TEST_CASE("on healthy.toml the bound is within 1% of none at p50 and p99") {
  // Under contention the bound's FIFO order differs from the core's
  // round-robin placement, so not job by job.
  Scenario sc = testing::ScenarioFile("healthy.toml");
  sc.workload.jobs = 600;
  SimResult none = Run(sc), b = Bound(sc);
  CHECK(b.p50 == Approx(none.p50).epsilon(0.01));
  CHECK(b.p99 == Approx(none.p99).epsilon(0.01));
}

TEST_CASE("the bound is at most every policy's p50 and p99 on straggler scenarios") {
  // Constant task times: a copy cannot draw a shorter normal time, so
  // stragglers and the fail-slow executor are all a policy can avoid.
  const std::string base = R"(
[core]
policy_interval_s = 0.1
[cluster]
executors = 10
slots = 2
network = { dist = "constant", value = 0.001 }
[workload]
arrival = "poisson"
rate = 0.6
jobs = 300
[[workload.class]]
tasks = 16
)";
  for (const std::string& faults :
       {std::string("task_time = { dist = \"constant\", value = 1.0, straggler_p = 0.05, straggler_factor = 10 }\n"),
        std::string("task_time = 1.0\n[[cluster.fail_slow]]\nexecutor = 2\nat_s = 20\nfactor = 8\n"),
        std::string("task_time = { dist = \"uniform\", min = 1.0, max = 1.0, straggler_p = 0.03, straggler_factor = 6 }\n"
                    "[[cluster.crash]]\nexecutor = 4\nat_s = 100\ndetect_s = 2\n")}) {
    Scenario sc = ScenarioFrom(base + faults);
    SimResult b = Bound(sc);
    REQUIRE(b.jobs == 300);
    for (const char* p : {"none", "spark", "late", "clone", "hedge", "reassign", "predictive", "default"}) {
      auto r = RunPolicy(sc, p, 1);
      REQUIRE(r.ok());
      INFO(faults << "policy " << p << ": p50 " << r->p50 << " p99 " << r->p99 << ", bound " << b.p50 << " "
                  << b.p99);
      CHECK(b.p50 <= r->p50 + 1e-9);
      CHECK(b.p99 <= r->p99 + 1e-9);
    }
  }
}

TEST_CASE("the bound knows a fail-slow executor and gives it only work it finishes first") {
  Scenario sc = ScenarioFrom(R"(
[cluster]
executors = 4
slots = 1
[[cluster.fail_slow]]
executor = 0
at_s = 0
factor = 100
[workload]
arrival = "poisson"
rate = 0.2
jobs = 100
[[workload.class]]
tasks = 3
task_time = 1.0
)");
  SimResult b = Bound(sc);
  REQUIRE(b.jobs == 100);
  // Three healthy slots for three tasks: a task waits for one of them
  // (when two jobs overlap) rather than take 100 s on the slow one.
  CHECK(b.p50 == Approx(1.0));
  CHECK(b.p99 <= 2.0 + 1e-9);
  CHECK(b.machine_s == Approx(300.0));  // every task ran 1 s: none on the slow executor
}

TEST_CASE("extra_machine is machine time relative to none in the same comparison") {
  std::vector<SimResult> rs(3);
  rs[0].policy = "spark";
  rs[0].machine_s = 120;
  rs[1].policy = "none";
  rs[1].machine_s = 100;
  rs[2].policy = "default";
  rs[2].machine_s = 90;
  FillExtraMachine(&rs);
  CHECK(rs[0].extra_machine == Approx(0.2));
  CHECK(rs[1].extra_machine == 0);
  CHECK(rs[2].extra_machine == Approx(-0.1));
  std::vector<SimResult> no_none(rs.begin(), rs.begin() + 1);
  FillExtraMachine(&no_none);
  CHECK(std::isnan(no_none[0].extra_machine));
  CHECK(ResultsJson(no_none).find("\"extra_machine\": null") != std::string::npos);
}

TEST_CASE("cloning every task once costs one extra machine share, and none costs none") {
  // Constant task times and idle slots: clone and original start together
  // and run the whole task each. Enough slots that the jobs Poisson arrivals
  // overlap never fill them: a first attempt without a free slot would take
  // another job's clone's (docs/POLICIES.md, "Copies only use idle capacity").
  Scenario sc = ScenarioFrom(R"(
[core]
redundancy_budget = 1.0
[policies.clone]
small_job_tasks = 100
copies = 1
budget_share = 1.0
[cluster]
executors = 20
slots = 2
[workload]
arrival = "poisson"
rate = 0.2
jobs = 200
[[workload.class]]
tasks = 4
task_time = 1.0
)");
  std::vector<SimResult> rs;
  for (const char* p : {"none", "clone"}) {
    auto r = RunPolicy(sc, p, 1);
    REQUIRE(r.ok());
    rs.push_back(*r);
  }
  FillExtraMachine(&rs);
  CHECK(rs[0].extra_machine == 0);
  CHECK(rs[1].copies == rs[1].tasks);
  CHECK(rs[1].extra_machine == Approx(1.0).margin(0.02));  // clone factor 2, minus 1
  std::string json = ResultsJson(rs);
  for (const char* key : {"\"extra_machine\"", "\"bound_p50\"", "\"bound_p99\"", "\"p50_x_bound\"", "\"p99_x_bound\""})
    CHECK(json.find(key) != std::string::npos);
}

}  // namespace
}  // namespace tailcut::sim
