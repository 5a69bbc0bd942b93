// The simulator feeds the core every event kind the live daemon does:
// progress, failures and drops besides starts and successes.
#include "sim_helpers.h"

using namespace tailcut;
using namespace tailcut::sim;
using namespace tailcut::sim::testing;

namespace {

// One job of 4 ten-second tasks on 5 executors (one spare for a copy);
// executor 0 is 10x slow.
std::string SlowNode(int progress_reports) {
  return R"(
[cluster]
executors = 5
progress_reports = )" + std::to_string(progress_reports) + R"(
[[cluster.fail_slow]]
executor = 0
at_s = 0
factor = 10
[workload]
arrival = "closed"
jobs = 1
[[workload.class]]
tasks = 4
task_time = 10.0
)";
}

// 40 jobs of 4 one-second tasks on 4 executors, two jobs at a time.
std::string Flaky(int max_attempts, const std::string& cluster_extra, const std::string& class_extra) {
  return "[core]\nmax_attempts = " + std::to_string(max_attempts) + "\n[cluster]\nexecutors = 4\n" + cluster_extra +
         "[workload]\narrival = \"closed\"\noutstanding = 2\njobs = 40\n"
         "[[workload.class]]\ntasks = 4\ntask_time = 1.0\n" + class_extra;
}

}  // namespace

TEST_CASE("LATE gets progress reports: it spots the slow attempt before any task commits") {
  auto with = RunPolicy(ScenarioFrom(SlowNode(19)), "late", 1);
  auto without = RunPolicy(ScenarioFrom(SlowNode(0)), "late", 1);
  REQUIRE(with.ok());
  REQUIRE(without.ok());
  CHECK(with->progress > 0);
  CHECK(without->progress == 0);
  REQUIRE(with->jobs == 1);
  REQUIRE(without->jobs == 1);
  // With progress the slow attempt's rate (5% after 5 s) is known at once and
  // its copy starts before the fast tasks end at 10 s: done before 20 s.
  // Without progress LATE must wait for a committed median (10 s) and for the
  // attempt to overrun it, so its copy ends after 20 s.
  CHECK(with->copies >= 1);
  CHECK(with->p50 < 20);
  CHECK(without->p50 > 20);
}

TEST_CASE("progress reports are evenly spaced and rescheduled when an executor turns slow") {
  Scenario sc = ScenarioFrom(SlowNode(3));
  SimResult r = Run(sc);
  CHECK(r.progress == 4 * 3);  // every attempt reports 1/4, 2/4, 3/4
  CHECK(r.p50 == Approx(100));  // the slow attempt: 10 s x 10
}

TEST_CASE("fail_prob: failed attempts are reported, and with max_attempts = 1 jobs fail with the reason") {
  SimResult r = Run(ScenarioFrom(Flaky(1, "", "fail_prob = 0.2\n")));
  CHECK(r.jobs == 40);
  CHECK(r.failed_attempts > 0);
  CHECK(r.failed > 0);
  CHECK(r.failed < 40);
  CHECK(r.last_failure.find("simulated failure") != std::string::npos);
  CHECK(r.last_failure.find("failed 1 times") != std::string::npos);
  // With retries the same failures are absorbed.
  SimResult retry = Run(ScenarioFrom(Flaky(9, "", "fail_prob = 0.2\n")));
  CHECK(retry.failed_attempts > 0);
  CHECK(retry.failed == 0);
  CHECK(retry.committed == retry.tasks);
}

TEST_CASE("drop_prob: dropped attempts are requeued and every task commits exactly once") {
  SimResult r = Run(ScenarioFrom(Flaky(1, "drop_prob = 0.3\n", "")));
  CHECK(r.dropped > 0);
  CHECK(r.failed_attempts == 0);
  CHECK(r.jobs == 40);
  CHECK(r.failed == 0);  // drops do not count against max_attempts
  CHECK(r.unfinished == 0);
  CHECK(r.committed == r.tasks);
  CHECK(r.attempts == r.tasks + r.dropped);
}

TEST_CASE("fail_prob and drop_prob are checked") {
  for (const char* t : {"[cluster]\ndrop_prob = 1.5\n", "[[workload.class]]\nfail_prob = -0.1\n"}) {
    auto cfg = Config::Parse(t, "t");
    REQUIRE(cfg.ok());
    CHECK_FALSE(ParseScenario(std::move(cfg).value(), ".").ok());
  }
}
