// The simulator against closed forms (docs/LITERATURE.md, "Theory you can
// check a simulator against"): k tasks with Exp(mu) times, no network
// delay, one job at a time (closed loop), so job time = order statistics.
#include <catch2/catch.hpp>

#include "sim_helpers.h"

namespace tailcut::sim {
namespace {

using testing::Harmonic;
using testing::Run;
using testing::ScenarioFrom;

constexpr int kTrials = 20000;
constexpr double kMu = 2.0;  // mean task time 0.5 s

// A one-job-at-a-time scenario on `executors` single-slot executors.
std::string ClosedLoop(int executors, int tasks, const std::string& rule_keys, const std::string& core_keys = "") {
  return "[core]\npolicy_interval_s = 5.0\n" + core_keys + "\n[cluster]\nexecutors = " + std::to_string(executors) +
         "\nslots = 1\n[workload]\narrival = \"closed\"\noutstanding = 1\njobs = " + std::to_string(kTrials) +
         "\n[[workload.class]]\ntasks = " + std::to_string(tasks) +
         "\ntask_time = { dist = \"exp\", mean = " + std::to_string(1.0 / kMu) + " }\n" + rule_keys;
}

// Launches every task of every job with `copies` extra attempts.
class CloneAll final : public MitigationPolicy {
 public:
  explicit CloneAll(uint32_t copies) : copies_(copies) {}
  std::string_view name() const override { return "test-clone"; }
  void OnJobSubmitted(const ClusterView&, JobId job, std::vector<Proposal>* out) override {
    out->push_back(Proposal::CloneAtLaunch(job, copies_, "test"));
  }

 private:
  uint32_t copies_;
};

TEST_CASE("no redundancy: E[T] = H_k / mu") {
  for (int k : {1, 10}) {
    SimResult r = Run(ScenarioFrom(ClosedLoop(k, k, "")));
    REQUIRE(r.jobs == kTrials);
    REQUIRE(r.failed == 0);
    double expect = Harmonic(k) / kMu;
    INFO("k=" << k << " mean " << r.mean << " expect " << expect);
    CHECK(r.mean == Approx(expect).epsilon(0.02));
    CHECK(r.copies == 0);
    CHECK(r.extra_work == Approx(0).margin(1e-9));
  }
}

TEST_CASE("replication at start with losers cancelled: E[T] = H_k / ((c+1) mu) and machine time unchanged") {
  const int k = 10;
  for (uint32_t c : {1u, 2u}) {
    std::string core = "redundancy_budget = " + std::to_string(c + 1) + "\nmin_copies = 100000\n";
    Scenario sc = ScenarioFrom(ClosedLoop(k * static_cast<int>(c + 1), k, "", core));
    PolicyChain chain;
    chain.push_back(std::make_unique<CloneAll>(c));
    SimResult r = Run(sc, std::move(chain));
    REQUIRE(r.jobs == kTrials);
    double expect = Harmonic(k) / ((c + 1) * kMu);
    INFO("c=" << c << " mean " << r.mean << " expect " << expect);
    CHECK(r.mean == Approx(expect).epsilon(0.02));
    CHECK(r.copies == uint64_t{c} * k * kTrials);
    // Each of the c+1 attempts runs for the min: total machine time k/mu
    // per job, committed k/((c+1) mu), so extra work = c.
    CHECK(r.machine_s / kTrials == Approx(k / kMu).epsilon(0.02));
    CHECK(r.extra_work == Approx(c).epsilon(0.02));
  }
}

TEST_CASE("(n k) coding with any k of n: E[T] = (H_n - H_{n-k}) / mu") {
  for (auto [n, k] : {std::pair{15, 10}, std::pair{12, 4}}) {
    SimResult r = Run(ScenarioFrom(ClosedLoop(n, n, "rule = \"k_of_n\"\nk = " + std::to_string(k) + "\n")));
    REQUIRE(r.jobs == kTrials);
    REQUIRE(r.failed == 0);
    double expect = (Harmonic(n) - Harmonic(n - k)) / kMu;
    INFO("n=" << n << " k=" << k << " mean " << r.mean << " expect " << expect);
    CHECK(r.mean == Approx(expect).epsilon(0.02));
  }
}

}  // namespace
}  // namespace tailcut::sim
