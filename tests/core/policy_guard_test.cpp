// A policy that throws is disabled, not fatal: the core catches at the
// policy boundary, logs it, and the scheduler and the rest of the chain go on.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "core_harness.h"
#include "policy_guard.h"

using namespace tailcut;
using tailcut::testing::CoreHarness;

namespace {

// Throws from one hook (after proposing a copy of task 0, which must then
// be dropped); counts how often each hook is called.
struct Thrower : MitigationPolicy {
  enum class Hook { kSubmit, kTick, kAvoid };
  Hook hook;
  bool std_exception = true;
  int* calls;
  Thrower(Hook h, int* c, bool std_ex = true) : hook(h), std_exception(std_ex), calls(c) {}
  std::string_view name() const override { return "thrower"; }
  void Throw() const {
    ++*calls;
    if (std_exception) throw std::runtime_error("boom");
    throw 42;
  }
  void OnJobSubmitted(const ClusterView&, JobId j, std::vector<Proposal>* out) override {
    if (hook != Hook::kSubmit) return;
    out->push_back(Proposal::CloneAtLaunch(j, 1, "half-made"));
    Throw();
  }
  void OnTick(const ClusterView& v, std::vector<Proposal>* out) override {
    if (hook != Hook::kTick) return;
    v.ForEachRunningAttempt(
        [&](const AttemptView& a) { out->push_back(Proposal::LaunchCopy(a.job, a.task, "half-made")); });
    Throw();
  }
  bool AvoidExecutor(const ClusterView&, ExecutorId) const override {
    if (hook == Hook::kAvoid) Throw();
    return false;
  }
};

// A working policy: copies every task whose only attempt runs, once per tick.
struct Copier : MitigationPolicy {
  int ticks = 0;
  std::string_view name() const override { return "copier"; }
  void OnTick(const ClusterView& v, std::vector<Proposal>* out) override {
    ++ticks;
    v.ForEachRunningAttempt([&](const AttemptView& a) {
      if (a.task_live == 1) out->push_back(Proposal::LaunchCopy(a.job, a.task, "copier"));
    });
  }
};

size_t Copies(const CoreHarness& h) {
  size_t n = 0;
  for (auto& l : h.launches) n += l.copy;
  return n;
}

CoreOptions Roomy() {
  CoreOptions o;
  o.redundancy_budget = 1.0;
  o.lost_after_s = 0;
  return o;
}

}  // namespace

TEST_CASE("a policy that throws from OnTick is disabled, and the rest of the chain and the job go on") {
  int calls = 0;
  PolicyChain chain;
  chain.push_back(std::make_unique<Thrower>(Thrower::Hook::kTick, &calls));
  auto copier = std::make_unique<Copier>();
  Copier* c = copier.get();
  chain.push_back(std::move(copier));
  CoreHarness h(Roomy(), std::move(chain));
  h.Exec(1);
  h.Exec(1);
  auto job = h.core.SubmitJob(CoreHarness::Fanout(1));
  REQUIRE(job.ok());
  h.Drain();
  REQUIRE(h.launches.size() == 1);
  for (int i = 0; i < 5; ++i) {
    h.clock.Advance(0.2);
    h.core.Tick();
    h.Drain();
  }
  CHECK(calls == 1);  // never called again
  CHECK(h.core.DisabledPolicies() == std::vector<std::string>{"thrower: OnTick threw: boom"});
  CHECK(c->ticks == 5);    // the next policy in the chain still runs ...
  CHECK(Copies(h) == 1);   // ... and its copy is made; the thrower's half-made one is not
  for (auto& [a, l] : std::map<AttemptId, LaunchCmd>(h.live)) h.Finish(a);
  REQUIRE(h.finished.count(*job));
  CHECK(h.finished[*job].state == JobState::kSucceeded);
}

TEST_CASE("a policy that throws from OnJobSubmitted, even a non-std exception, is disabled and the job runs") {
  int calls = 0;
  PolicyChain chain;
  chain.push_back(std::make_unique<Thrower>(Thrower::Hook::kSubmit, &calls, /*std_ex=*/false));
  CoreHarness h(Roomy(), std::move(chain));
  h.Exec(2);
  h.Exec(2);
  auto job = h.core.SubmitJob(CoreHarness::Fanout(2));
  REQUIRE(job.ok());
  auto second = h.core.SubmitJob(CoreHarness::Fanout(2));
  REQUIRE(second.ok());
  h.Drain();
  CHECK(calls == 1);
  CHECK(h.core.DisabledPolicies() ==
        std::vector<std::string>{"thrower: OnJobSubmitted threw: an exception not derived from std::exception"});
  CHECK(h.launches.size() == 4);  // one attempt per task: the half-made clone proposal was dropped
  CHECK(Copies(h) == 0);
}

TEST_CASE("a policy that throws from AvoidExecutor is disabled and placement goes on") {
  int calls = 0;
  PolicyChain chain;
  chain.push_back(std::make_unique<Thrower>(Thrower::Hook::kAvoid, &calls));
  CoreHarness h(Roomy(), std::move(chain));
  h.Exec(2);
  h.Exec(2);
  auto job = h.core.SubmitJob(CoreHarness::Fanout(4));
  REQUIRE(job.ok());
  h.Drain();
  CHECK(calls == 1);
  CHECK(h.launches.size() == 4);
  CHECK(h.core.DisabledPolicies() == std::vector<std::string>{"thrower: AvoidExecutor threw: boom"});
}

TEST_CASE("GuardPolicies drops null entries and disables a policy whose name() throws") {
  struct BadName : MitigationPolicy {
    std::string_view name() const override { throw std::logic_error("no name"); }
  };
  PolicyChain chain;
  chain.push_back(nullptr);
  chain.push_back(std::make_unique<BadName>());
  chain.push_back(std::make_unique<Copier>());
  auto guarded = core::GuardPolicies(std::move(chain));
  REQUIRE(guarded.size() == 2);
  CHECK(guarded[0].name == "policy #1");
  CHECK(guarded[0].disabled == "name() threw: no name");
  CHECK(guarded[1].name == "copier");
  CHECK(guarded[1].disabled.empty());
  bool ran = false;
  CHECK_FALSE(core::CallPolicy(guarded[0], "OnTick", [&](MitigationPolicy&) { ran = true; }));
  CHECK_FALSE(ran);  // a disabled policy is never called again
  CHECK(core::CallPolicy(guarded[1], "OnTick", [&](MitigationPolicy&) { ran = true; }));
  CHECK(ran);
}
