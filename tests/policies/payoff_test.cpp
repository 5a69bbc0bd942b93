// The payoff controller (policies/include/tailcut/policies/payoff.h): the
// ledger's accounting and verdicts with a scripted coin, and the wrapper's
// routing of events, wake-ups and proposals through the core.
#include "tailcut/policies/payoff.h"

#include <catch2/catch.hpp>
#include <deque>

#include "sim.h"

namespace tailcut {
namespace {

using testing::CoreHarness;
using testing::Sim;
using Verdict = PayoffLedger::Verdict;

// A coin that returns the scripted values, then 0.5.
struct Coin {
  std::deque<double> next;
  double operator()() {
    if (next.empty()) return 0.5;
    double u = next.front();
    next.pop_front();
    return u;
  }
};

TEST_CASE("payoff ledger: a relative arm acts while it warms up and keeps acting when it pays") {
  auto coin = std::make_shared<Coin>();
  PayoffLedger l({}, [coin] { return (*coin)(); });
  // Warming up, a relative arm follows its proposer (the prediction is the
  // control), but at most `warmup` (4) actions wait for an outcome.
  for (int i = 0; i < 4; ++i) CHECK(l.Decide("c/copy/p", true));
  CHECK(l.Judge("c/copy/p") == Verdict::kWarmup);
  coin->next = {0.0};
  CHECK_FALSE(l.Decide("c/copy/p", true));                                   // 4 in flight: held back
  for (double s : {-1.0, -1.2, -0.8, -1.1}) l.Outcome("c/copy/p", true, s);  // each saved ~1 s
  CHECK(l.Judge("c/copy/p") == Verdict::kPays);
  CHECK(l.Gain("c/copy/p") == Approx(1.025));
  coin->next = {0.99, 0.999};
  CHECK(l.Decide("c/copy/p", true));        // acts with 1 - control = 0.998
  CHECK_FALSE(l.Decide("c/copy/p", true));  // the holdout
  const auto& a = l.arms().at("c/copy/p");
  CHECK(a.decisions == 7);
  CHECK(a.acted == 5);
}

TEST_CASE("payoff ledger: an arm that costs falls back to none, exploring 2%") {
  auto coin = std::make_shared<Coin>();
  PayoffLedger l({}, [coin] { return (*coin)(); });
  CHECK(l.Decide("c/restart/p", true));
  for (double s : {0.9, 1.1, 1.0, 1.2, 0.8}) l.Outcome("c/restart/p", true, s);  // each lost ~1 s
  CHECK(l.Judge("c/restart/p") == Verdict::kCosts);
  coin->next = {0.5, 0.01};
  CHECK_FALSE(l.Decide("c/restart/p", true));
  CHECK(l.Decide("c/restart/p", true));  // exploration
  // The shape changes: actions start to pay; forgetting (memory 64) lets
  // the new outcomes take over.
  for (int i = 0; i < 200; ++i) l.Outcome("c/restart/p", true, -1.0 + 0.01 * (i % 3));
  CHECK(l.Judge("c/restart/p") == Verdict::kPays);
}

TEST_CASE("payoff ledger: the control group calibrates a relative arm, an absolute one needs both groups") {
  auto coin = std::make_shared<Coin>();
  PayoffLedger l({}, [coin] { return (*coin)(); });
  // Treated 1 s under the prediction, but control candidates also finish
  // 1 s under it: the prediction was pessimistic, the action buys nothing.
  CHECK(l.Decide("c/copy/p", true));
  for (double s : {-1.0, -1.1, -0.9, -1.0}) l.Outcome("c/copy/p", true, s);
  CHECK(l.Judge("c/copy/p") == Verdict::kPays);
  for (double s : {-1.0, -0.9, -1.1, -1.0}) l.Outcome("c/copy/p", false, s);
  CHECK(l.Judge("c/copy/p") == Verdict::kUnsure);
  CHECK(l.Gain("c/copy/p") == Approx(0).margin(1e-9));

  coin->next = {0.4, 0.6};
  CHECK(l.Decide("j/clone/c", false));  // a fair coin while warming up
  CHECK_FALSE(l.Decide("j/clone/c", false));
  for (double s : {1.0, 1.1, 0.9, 1.0}) l.Outcome("j/clone/c", true, s);
  CHECK(l.Judge("j/clone/c") == Verdict::kWarmup);  // no control yet
  for (double s : {2.0, 2.1, 1.9, 2.0}) l.Outcome("j/clone/c", false, s);
  CHECK(l.Judge("j/clone/c") == Verdict::kPays);
  CHECK(l.Gain("j/clone/c") == Approx(1.0));
}

TEST_CASE("payoff options: bad values are errors naming the key") {
  auto cfg = Config::Parse("[policies.payoff]\ncontrol = 0.7\n");
  REQUIRE(cfg.ok());
  PayoffOptions o;
  Status s = LoadPayoffOptions(*cfg, "policies.payoff.", &o);
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("policies.payoff.control") != std::string::npos);
}

// Asks for a wake-up at launch + 0.5 s and proposes a copy then.
class WakeAndCopy final : public MitigationPolicy {
 public:
  std::string_view name() const override { return "wake"; }
  void OnAttemptLaunched(const ClusterView&, const AttemptView& a, std::vector<Proposal>* out) override {
    if (!a.copy) out->push_back(Proposal::WakeUp(a.attempt, a.queued + 0.5));
  }
  void OnWakeUp(const ClusterView& v, const AttemptView& a, std::vector<Proposal>* out) override {
    ++wakeups;
    woken_at = v.Now();
    out->push_back(Proposal::LaunchCopy(a.job, a.task, "test"));
  }
  int wakeups = 0;
  double woken_at = -1;
};

TEST_CASE("payoff policy: inner wake-ups come back to their policy, its copies go through the ledger") {
  for (bool enabled : {true, false}) {
    PayoffOptions o;
    o.enabled = enabled;
    PolicyChain inner;
    inner.push_back(std::make_unique<WakeAndCopy>());
    auto* wake = static_cast<WakeAndCopy*>(inner.back().get());
    PolicyChain chain;
    chain.push_back(std::make_unique<PayoffPolicy>(o, std::move(inner), [] { return 0.5; }));
    auto* payoff = static_cast<PayoffPolicy*>(chain.back().get());
    Sim sim(Sim::Opts(), std::move(chain));
    sim.Exec(1);
    sim.Exec(1);
    sim.base = [](const LaunchCmd&) { return 2.0; };
    JobId job = sim.h.Submit(CoreHarness::Fanout(1));
    sim.Sync();
    REQUIRE(sim.RunUntil(job, 10));
    INFO("enabled " << enabled);
    CHECK(wake->wakeups == 1);
    CHECK(wake->woken_at == Approx(0.5).margin(0.11));
    CHECK(sim.Copies() == 1);  // warming up, the copy goes through
    // Enabled, the ledger saw the decision under its arm.
    const auto& arms = payoff->ledger().arms();
    CHECK(arms.count("sleep/copy/wake") == (enabled ? 1u : 0u));
  }
}

}  // namespace
}  // namespace tailcut
