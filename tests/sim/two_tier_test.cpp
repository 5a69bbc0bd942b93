// Two tiers in the simulator ([cluster.edges], sim/src/two_tier.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim_helpers.h"

using namespace tailcut;
using namespace tailcut::sim;
using tailcut::sim::testing::ScenarioFile;
using tailcut::sim::testing::ScenarioFrom;

namespace {

// 4 edges x 5 devices; quorum rounds of 13 tasks closing at 10; devices
// differ in speed so an edge quorum has stragglers to hand back.
std::string TwoTierToml(double edge_quorum, double link_s) {
  return R"(
[cluster]
slots = 1
speed = { dist = "lognormal", median = 1.0, sigma = 0.6 }
network = { dist = "constant", value = 0.01 }
[cluster.edges]
count = 4
executors_per_edge = 5
link = { dist = "constant", value = )" +
         std::to_string(link_s) + R"( }
edge_quorum = )" + std::to_string(edge_quorum) + R"(
[workload]
arrival = "closed"
outstanding = 1
jobs = 30
[[workload.class]]
name = "round"
rule = "quorum"
k = 10
overselect = 0.3
min_count = 8
deadline_s = 100
task_time = { dist = "lognormal", median = 1.0, sigma = 0.4 }
)";
}

}  // namespace

TEST_CASE("two tiers: the edges' devices are the cluster's executors and every round closes") {
  Scenario sc = ScenarioFrom(TwoTierToml(0, 0.05));
  CHECK(sc.cluster.edges.count == 4);
  CHECK(sc.cluster.executors == 20);
  auto r = RunPolicy(sc, "none", 1);
  REQUIRE(r.ok());
  CHECK(r->jobs == 30);
  CHECK(r->failed == 0);
  CHECK(r->unfinished == 0);
  CHECK(r->committed == 30 * 10);  // a quorum round commits exactly k
  CHECK(r->dropped == 0);          // no edge quorum: nothing handed back
  // Every round spans at least two link crossings plus a task.
  for (double l : r->latencies) CHECK(l > 2 * 0.05);
}

TEST_CASE("two tiers: the same seed gives the same run, and the link delay is paid") {
  Scenario sc = ScenarioFrom(TwoTierToml(0, 0.05));
  auto a = RunPolicy(sc, "default", 7);
  auto b = RunPolicy(sc, "default", 7);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->latencies == b->latencies);
  CHECK(a->machine_s == b->machine_s);
  Scenario far = ScenarioFrom(TwoTierToml(0, 1.0));
  auto c = RunPolicy(far, "none", 7);
  auto d = RunPolicy(sc, "none", 7);
  REQUIRE(c.ok());
  REQUIRE(d.ok());
  CHECK(c->mean > d->mean);
}

TEST_CASE("two tiers: an edge quorum hands stragglers back and the rounds still close") {
  Scenario sc = ScenarioFrom(TwoTierToml(0.6, 0.05));
  auto r = RunPolicy(sc, "none", 1);
  REQUIRE(r.ok());
  CHECK(r->jobs == 30);
  CHECK(r->failed == 0);
  CHECK(r->unfinished == 0);
  CHECK(r->dropped > 0);  // handed back to the parent
}

TEST_CASE("two tiers: what the model does not cover is refused, and bad keys are errors") {
  Scenario sc = ScenarioFrom(TwoTierToml(0, 0.05) + R"(
[[cluster.fail_slow]]
executor = 3
at_s = 1
factor = 5
)");
  auto r = RunPolicy(sc, "none", 1);
  CHECK_FALSE(r.ok());
  auto cfg = Config::Parse(TwoTierToml(1.5, 0.05), "bad.toml");
  REQUIRE(cfg.ok());
  CHECK_FALSE(ParseScenario(std::move(cfg).value(), ".").ok());
  auto zero = Config::Parse("[cluster.edges]\ncount = 0\n", "zero.toml");
  REQUIRE(zero.ok());
  CHECK_FALSE(ParseScenario(std::move(zero).value(), ".").ok());
}

TEST_CASE("two tiers: the shipped scenario loads as two tiers") {
  Scenario sc = ScenarioFile("edge_two_tier.toml");
  CHECK(sc.cluster.edges.count == 10);
  CHECK(sc.cluster.executors == sc.cluster.edges.count * sc.cluster.edges.executors_per_edge);
  CHECK(sc.cluster.edges.edge_quorum == 0);
}

namespace {

// Asks for a wake-up 0.0123 s after each attempt starts (off the 0.1 s tick
// grid) and records when each arrives.
struct WakeRecorder final : MitigationPolicy {
  std::vector<std::pair<double, double>>* seen;  // (asked for, delivered at)
  std::unordered_map<AttemptId, double> asked;
  explicit WakeRecorder(std::vector<std::pair<double, double>>* s) : seen(s) {}
  std::string_view name() const override { return "wake-recorder"; }
  void OnAttemptStarted(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override {
    asked[a.attempt] = v.Now() + 0.0123;
    out->push_back(Proposal::WakeUp(a.attempt, asked[a.attempt]));
  }
  void OnWakeUp(const ClusterView& v, const AttemptView& a, std::vector<Proposal>*) override {
    seen->emplace_back(asked.at(a.attempt), v.Now());
  }
};

}  // namespace

TEST_CASE("two tiers: an edge's policy wake-ups arrive at their time, as on one tier") {
  // Tasks of ~1 s: every attempt is still running when its wake-up is due.
  Scenario sc = ScenarioFrom(TwoTierToml(0, 0.05));
  std::vector<std::pair<double, double>> seen;
  std::vector<PolicyChain> edges(sc.cluster.edges.count);
  for (PolicyChain& c : edges) c.push_back(std::make_unique<WakeRecorder>(&seen));
  Simulator sim(sc, PolicyChain{}, std::move(edges), 1);
  SimResult r = sim.Run();
  CHECK(r.jobs == 30);
  REQUIRE(seen.size() >= 30 * 10);                   // every committed attempt's at least
  for (auto [asked, at] : seen) CHECK(at == asked);  // not at the next tick
}

TEST_CASE("two tiers: divisible classes run, each edge's device working the share the top core gave its task") {
  const std::string shape = R"(
[cluster]
slots = 1
speed = { dist = "lognormal", median = 1.0, sigma = 0.8 }
network = { dist = "constant", value = 0.001 }
[cluster.edges]
count = 4
executors_per_edge = 1
link = { dist = "constant", value = 0.01 }
[workload]
arrival = "closed"
outstanding = 1
jobs = 40
[[workload.class]]
name = "step"
tasks = { dist = "constant", value = 4 }
task_time = { dist = "constant", value = 1.0 }
)";
  Scenario plain = ScenarioFrom(shape);
  Scenario divisible = ScenarioFrom(shape + "divisible = true\n");
  REQUIRE(divisible.workload.classes[0].divisible);
  auto a = RunPolicy(plain, "none", 3);
  auto b = RunPolicy(divisible, "none", 3);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(b->jobs == 40);
  CHECK(b->failed == 0);
  CHECK(b->committed == 40 * 4);
  // Once the top core has learnt the edges' speeds it gives the slow ones
  // smaller shares: the same steps take less time than equal tasks do.
  CHECK(b->mean < a->mean);
}
