// Policy events and wake-ups as SchedulerCore delivers them (policy.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "core_harness.h"

using namespace tailcut;
using tailcut::testing::CoreHarness;

namespace {

// Logs every hook it gets; asks for a wake-up `wake_after_s` after each
// start; avoids executor `avoid` once told to.
struct Probe final : MitigationPolicy {
  std::vector<std::string>* log;
  double wake_after_s;
  ExecutorId avoid = 0;
  bool avoiding = false;
  std::vector<Time> woken_at;
  std::vector<Time> ended_started;  // each ended attempt's `started`
  Probe(std::vector<std::string>* l, double wake) : log(l), wake_after_s(wake) {}
  std::string_view name() const override { return "probe"; }
  void OnAttemptLaunched(const ClusterView&, const AttemptView& a, std::vector<Proposal>*) override {
    log->push_back("launched " + std::to_string(a.attempt));
  }
  void OnAttemptStarted(const ClusterView&, const AttemptView& a, std::vector<Proposal>* out) override {
    log->push_back("started " + std::to_string(a.attempt));
    if (wake_after_s > 0) out->push_back(Proposal::WakeUp(a.attempt, a.started + wake_after_s));
  }
  void OnAttemptEnded(const ClusterView& v, const AttemptView& a, const AttemptEnd& e, std::vector<Proposal>*) override {
    AttemptView gone;
    ended_started.push_back(a.started);
    log->push_back("ended " + std::to_string(a.attempt) + " " + AttemptOutcomeName(e.outcome) +
                   (v.FindAttempt(a.attempt, &gone) ? " still-live" : ""));
  }
  void OnExecutorChanged(const ClusterView&, ExecutorId e, ExecutorChange c, std::vector<Proposal>*) override {
    if (c == ExecutorChange::kJoined) log->push_back("joined " + std::to_string(e));
  }
  void OnWakeUp(const ClusterView& v, const AttemptView& a, std::vector<Proposal>*) override {
    log->push_back("woken " + std::to_string(a.attempt));
    woken_at.push_back(v.Now());
  }
  bool AvoidExecutor(const ClusterView&, ExecutorId e) const override { return avoiding && e == avoid; }
};

// A chain of one Probe; *out points at it.
PolicyChain ProbeChain(std::vector<std::string>* log, double wake_after_s, Probe** out) {
  auto probe = std::make_unique<Probe>(log, wake_after_s);
  *out = probe.get();
  PolicyChain c;
  c.push_back(std::move(probe));
  return c;
}

}  // namespace

TEST_CASE("policies get attempt and executor events in order, after placement") {
  std::vector<std::string> log;
  Probe* p = nullptr;
  CoreHarness h({}, ProbeChain(&log, 0, &p));
  ExecutorId e = h.Exec(1);
  auto job = h.core.SubmitJob(CoreHarness::Fanout(1));
  REQUIRE(job.ok());
  h.Drain();
  REQUIRE(h.launches.size() == 1);
  AttemptId a = h.launches[0].attempt;
  h.core.AttemptStarted(a);
  h.Drain();
  h.Finish(a);
  std::string id = std::to_string(a);
  CHECK(log == std::vector<std::string>{"joined " + std::to_string(e), "launched " + id, "started " + id,
                                        "ended " + id + " committed"});
}

// Ended before its start was delivered (a Report carrying both, as an
// executor's pipelined no-ops do): only the end is, with the start's time
// (docs/PLUGINS.md). The other attempt's start, delivered with it, stays.
TEST_CASE("a start reported together with its end is not delivered, the end carries it") {
  std::vector<std::string> log;
  Probe* p = nullptr;
  CoreHarness h({}, ProbeChain(&log, 0, &p));
  h.Exec(2);
  auto job = h.core.SubmitJob(CoreHarness::Fanout(2));
  REQUIRE(job.ok());
  h.Drain();
  REQUIRE(h.launches.size() == 2);
  AttemptId a = h.launches[0].attempt, b = h.launches[1].attempt;
  log.clear();
  h.clock.Set(1.5);
  h.core.AttemptStarted(a);
  h.core.AttemptStarted(b);
  h.Finish(a);  // its end in the same delivery as both starts
  const std::string ia = std::to_string(a), ib = std::to_string(b);
  CHECK(log == std::vector<std::string>{"started " + ib, "ended " + ia + " committed"});
  CHECK(p->ended_started.back() == Approx(1.5));
  h.Finish(b);
  CHECK(log.back() == "ended " + ib + " committed");
}

TEST_CASE("a wake-up comes at its time, through TakeCommands, and not for an ended attempt") {
  std::vector<std::string> log;
  Probe* p = nullptr;
  CoreOptions o;
  o.lost_after_s = 0;         // the test's executor sends no heartbeats
  o.policy_interval_s = 100;  // OnTick, a timer too, falls due long after
  o.policy_interval_ratio = 0;
  CoreHarness h(o, ProbeChain(&log, 2.0, &p));
  h.Exec(2);
  auto job = h.core.SubmitJob(CoreHarness::Fanout(2));
  REQUIRE(job.ok());
  h.Drain();
  REQUIRE(h.launches.size() == 2);
  h.core.Tick();  // the policies' first OnTick, due now; the next is 100 s away
  AttemptId first = h.launches[0].attempt, second = h.launches[1].attempt;
  h.clock.Set(1.0);
  h.core.AttemptStarted(first);
  h.core.AttemptStarted(second);
  h.Drain();
  CHECK(h.core.NextWakeUp() == Approx(3.0));
  h.clock.Set(2.5);
  h.Finish(second);  // its wake-up is dropped
  CHECK(p->woken_at.empty());
  h.clock.Set(3.0);
  h.Drain();
  REQUIRE(p->woken_at.size() == 1);
  CHECK(p->woken_at[0] == Approx(3.0));
  CHECK(std::count(log.begin(), log.end(), "woken " + std::to_string(first)) == 1);
  CHECK(std::count(log.begin(), log.end(), "woken " + std::to_string(second)) == 0);
  CHECK(h.core.NextWakeUp() == Approx(100));  // only the policies' OnTick is pending
}

TEST_CASE("avoid advice is cached per executor and refreshed on its events") {
  std::vector<std::string> log;
  Probe* p = nullptr;
  CoreOptions o;
  o.policy_interval_s = 1;
  CoreHarness h(o, ProbeChain(&log, 0, &p));
  ExecutorId a = h.Exec(1), b = h.Exec(1);
  p->avoid = a;
  p->avoiding = true;  // not asked yet: the cache still says a is fine
  h.clock.Set(1);
  h.core.Tick();  // after a tick every executor is asked again
  auto job = h.core.SubmitJob(CoreHarness::Fanout(1));
  REQUIRE(job.ok());
  h.Drain();
  REQUIRE(h.launches.size() == 1);
  CHECK(h.launches[0].executor == b);  // a is avoided while b has room
  auto job2 = h.core.SubmitJob(CoreHarness::Fanout(1));
  REQUIRE(job2.ok());
  h.Drain();
  REQUIRE(h.launches.size() == 2);
  CHECK(h.launches[1].executor == a);  // ... but still used when nothing else is free
}

TEST_CASE("the policy interval follows the typical committed run time") {
  std::vector<std::string> log;
  Probe* p = nullptr;
  CoreOptions o;  // defaults: ratio 0.25, floor 1 ms, ceiling 60 s
  CoreHarness h(o, ProbeChain(&log, 0, &p));
  CHECK(h.core.PolicyInterval() == o.policy_interval_s);  // nothing committed yet
  h.Exec(4);
  auto job = h.core.SubmitJob(CoreHarness::Fanout(4));
  REQUIRE(job.ok());
  h.Drain();
  REQUIRE(h.launches.size() == 4);
  for (auto& l : h.launches) h.Finish(l.attempt, 0.02);  // 20 ms tasks
  CHECK(h.core.PolicyInterval() == Approx(0.25 * 0.02));
  auto big = h.core.SubmitJob(CoreHarness::Fanout(4));
  REQUIRE(big.ok());
  h.Drain();
  for (size_t i = 4; i < h.launches.size(); ++i) h.Finish(h.launches[i].attempt, 1e6);  // the ceiling holds
  CHECK(h.core.PolicyInterval() == o.policy_interval_max_s);
  // No policies (nothing runs at the interval), or ratio 0: policy_interval_s.
  auto fixed_after_commit = [](CoreOptions opt, PolicyChain chain) {
    CoreHarness f(opt, std::move(chain));
    f.Exec(1);
    REQUIRE(f.core.SubmitJob(CoreHarness::Fanout(1)).ok());
    f.Drain();
    f.Finish(f.launches.at(0).attempt, 0.02);
    return f.core.PolicyInterval();
  };
  CHECK(fixed_after_commit(o, {}) == o.policy_interval_s);
  o.policy_interval_ratio = 0;
  CHECK(fixed_after_commit(o, ProbeChain(&log, 0, &p)) == o.policy_interval_s);
}
