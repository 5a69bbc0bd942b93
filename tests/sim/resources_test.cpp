// Memory requests and multi-GPU tasks in scenarios (issue 26): the modelled
// executors say their memory and GPUs, classes ask for them, and the core
// places work as it does live: 16 one-second tasks on 4 executors x 4 slots
// take one wave, or as many as memory or GPUs allow at a time.
#include "sim_helpers.h"

using namespace tailcut;
using namespace tailcut::sim;
using namespace tailcut::sim::testing;

namespace {

std::string Fleet(const std::string& cluster_extra, const std::string& class_extra) {
  return "[cluster]\nexecutors = 4\nslots = 4\n" + cluster_extra +
         "[workload]\narrival = \"closed\"\njobs = 1\n"
         "[[workload.class]]\ntasks = 16\ntask_time = 1.0\n" +
         class_extra;
}

StatusOr<Scenario> Parse(const std::string& toml) {
  auto cfg = Config::Parse(toml, "test");
  if (!cfg.ok()) return cfg.status();
  return ParseScenario(std::move(cfg).value(), ".");
}

}  // namespace

TEST_CASE("sim: memory requests limit how many tasks an executor runs at once") {
  SimResult free = Run(ScenarioFrom(Fleet("memory_mb = 4000\n", "")));
  SimResult half = Run(ScenarioFrom(Fleet("memory_mb = 1000\n", "memory_mb = 400\n")));
  SimResult quarter = Run(ScenarioFrom(Fleet("memory_mb = 1000\n", "memory_mb = 1000\n")));
  REQUIRE(free.jobs == 1);
  REQUIRE(half.jobs == 1);
  REQUIRE(quarter.jobs == 1);
  CHECK(free.failed + half.failed + quarter.failed == 0);
  // 16 slots: one wave; two 400 MB tasks per 1000 MB executor: two waves; one: four.
  CHECK(free.p50 == Approx(1.0).margin(0.05));
  CHECK(half.p50 == Approx(2.0).margin(0.05));
  CHECK(quarter.p50 == Approx(4.0).margin(0.05));
}

TEST_CASE("sim: multi-gpu tasks take that many of an executor's gpus") {
  SimResult two = Run(ScenarioFrom(Fleet("gpus = 2\n", "gpus = 2\n")));
  SimResult one = Run(ScenarioFrom(Fleet("gpus = 2\n", "gpus = 1\n")));
  REQUIRE(two.jobs == 1);
  REQUIRE(one.jobs == 1);
  CHECK(two.p50 == Approx(4.0).margin(0.05));  // one 2-gpu task per executor at a time
  CHECK(one.p50 == Approx(2.0).margin(0.05));  // two 1-gpu tasks
}

TEST_CASE("sim: a task asking for more memory than any executor has fails its job with the reason") {
  std::string toml = "[core]\ninfeasible_grace_s = 1\n" + Fleet("memory_mb = 1000\n", "memory_mb = 2000\n");
  SimResult r = Run(ScenarioFrom(toml));
  CHECK(r.failed == 1);
  CHECK(r.last_failure.find("2000 MB of memory (the most any executor has: 1000 MB)") != std::string::npos);
}

TEST_CASE("sim: bad memory amounts in a scenario are errors naming the key") {
  auto neg = Parse(Fleet("memory_mb = -5\n", ""));
  REQUIRE_FALSE(neg.ok());
  CHECK(neg.status().message().find("cluster.memory_mb") != std::string::npos);
  auto huge = Parse(Fleet("", "memory_mb = 2000000000000\n"));
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.status().message().find("memory_mb must be in [0, 2^40]") != std::string::npos);
  auto nan = Parse(Fleet("", "memory_mb = nan\n"));
  REQUIRE_FALSE(nan.ok());
  CHECK(nan.status().message().find("memory_mb") != std::string::npos);
}
