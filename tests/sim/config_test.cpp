// Scenarios and the daemon read [core], [predictor] and [policies.*] with one
// loader (tailcut/policies/scheduling_config.h) and reject the same typos.
#include "daemon_config.h"
#include "sim_helpers.h"
#include "tailcut/policies/payoff.h"
#include "tailcut/policies/registry.h"
#include "tailcut/sim/command.h"

using namespace tailcut;
using namespace tailcut::sim;
using namespace tailcut::sim::testing;

namespace {

std::string ScenarioError(const std::string& toml) {
  auto cfg = Config::Parse(toml, "same.toml");
  REQUIRE(cfg.ok());
  auto sc = ParseScenario(std::move(cfg).value(), ".");
  return sc.ok() ? "" : sc.status().message();
}

std::string DaemonError(const std::string& toml) {
  auto cfg = Config::Parse(toml, "same.toml");
  REQUIRE(cfg.ok());
  ServerOptions o;
  auto chain = LoadDaemonConfig(*cfg, &o);
  return chain.ok() ? "" : chain.status().message();
}

}  // namespace

TEST_CASE("sim and daemon reject the same misspelled policy key with the same message") {
  const std::string typo = "[policies.spark]\nmultipler = 2\n";
  std::string sim = ScenarioError(typo), daemon = DaemonError(typo);
  CHECK(sim == "same.toml: unknown key 'policies.spark.multipler'");
  CHECK(sim == daemon);
  // A policy table of no known policy: the same error listing the names.
  const std::string table = "[policies.sprak]\nmultiplier = 2\n";
  sim = ScenarioError(table);
  CHECK(sim.find("[policies.sprak]: no such policy (known: ") != std::string::npos);
  CHECK(sim.find("spark") != std::string::npos);
  CHECK(sim == DaemonError(table));
  // A bad value is the policy's own error, in both.
  const std::string value = "[policies.spark]\nmultiplier = 0.5\n";
  CHECK_FALSE(ScenarioError(value).empty());
  CHECK(ScenarioError(value) == DaemonError(value));
  // A typo in [predictor] or [core].
  for (const char* t : {"[predictor]\nmin_sample = 3\n", "[core]\nmax_attempt = 3\n"}) {
    INFO(t);
    CHECK_FALSE(ScenarioError(t).empty());
    CHECK(ScenarioError(t) == DaemonError(t));
  }
  // Valid tables pass both.
  const std::string ok = "[policies.spark]\nmultiplier = 2\n[policies.late]\nspeculative_cap = 0.2\n[predictor]\nmin_samples = 7\n";
  CHECK(ScenarioError(ok) == "");
  CHECK(DaemonError(ok) == "");
}

TEST_CASE("a scenario's [predictor] reaches the simulator's core") {
  const std::string base = R"(
[cluster]
executors = 8
[[cluster.fail_slow]]
executor = 0
at_s = 0
factor = 8
[workload]
arrival = "closed"
outstanding = 2
jobs = 60
[[workload.class]]
tasks = 8
task_time = 1.0
)";
  Scenario a = ScenarioFrom(base);
  Scenario b = ScenarioFrom(base + "[predictor]\nmin_samples = 100000\n");
  CHECK(a.predictor.min_samples != 100000);
  CHECK(b.predictor.min_samples == 100000);
  CHECK(a.core.lost_after_s == 0);  // the simulator's default stays
  // predictive needs the latency predictor: with no prediction ever known it
  // launches other (fewer) copies.
  auto ra = RunPolicy(a, "predictive", 1);
  auto rb = RunPolicy(b, "predictive", 1);
  REQUIRE(ra.ok());
  REQUIRE(rb.ok());
  CHECK(ra->copies > 0);
  CHECK(ra->copies != rb->copies);
}

TEST_CASE("'default' is the same chain for the daemon, tailcut sim and tailcut bench") {
  // `default` is the payoff controller around the chain (docs/POLICIES.md).
  auto names = [](const PolicyChain& c) {
    std::vector<std::string> out;
    for (auto& p : c) {
      const auto* payoff = dynamic_cast<const PayoffPolicy*>(p.get());
      if (!payoff) {
        out.emplace_back(p->name());
        continue;
      }
      for (auto& q : payoff->inner()) out.emplace_back(q->name());
    }
    return out;
  };
  auto empty = Config::Parse("", "empty.toml");
  REQUIRE(empty.ok());
  ServerOptions o;
  auto daemon = LoadDaemonConfig(*empty, &o);  // no policies.chain: "default"
  REQUIRE(daemon.ok());
  Scenario sc = ScenarioFrom("");
  auto entry = MakePolicyEntry("default", sc.config);  // sim's RunPolicy and bench's RunLivePolicy
  REQUIRE(entry.ok());
  CHECK(names(*daemon) == DefaultPolicyChain());
  CHECK(names(*entry) == DefaultPolicyChain());
  auto chained = MakePolicyEntry("none+default", sc.config);
  REQUIRE(chained.ok());
  CHECK(names(*chained) == DefaultPolicyChain());
}

TEST_CASE("a scenario's policies.chain is one --policy entry, used when --policy is not given") {
  CHECK(ScenarioFrom("").chain == "none");
  Scenario sc = ScenarioFrom("[policies]\nchain = \"clone, spark\"\n");
  CHECK(sc.chain == "clone+spark");
  SimCommandOptions o;  // no --policy
  std::vector<std::string> ran;
  auto run = [&](const std::string& entry) -> StatusOr<SimResult> {
    ran.push_back(entry);
    return Status::InvalidArgument("stop here");
  };
  CHECK(ComparePolicies(o, sc, "test", "", "", run) == 2);
  CHECK(ran == std::vector<std::string>{"clone+spark"});
  o.policies = "none,late";
  ran.clear();
  CHECK(ComparePolicies(o, sc, "test", "", "", run) == 2);
  CHECK(ran == std::vector<std::string>{"none"});  // stops at the first error
}
