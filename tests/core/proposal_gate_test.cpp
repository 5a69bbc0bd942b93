// The proposal gate: policy proposals are applied only within capacity, the
// redundancy budget and the quarantine cap.
#include <catch2/catch.hpp>

#include "state_fixture.h"

using namespace tailcut;
using tailcut::testing::StateFixture;

TEST_CASE("the quarantine cap: a share of the fleet, at least 1 of 3 or more, never more than half") {
  using core::QuarantineCap;
  CHECK(QuarantineCap(0.1, 1) == 0);
  CHECK(QuarantineCap(0.1, 2) == 0);   // under three: the share alone, rounded down
  CHECK(QuarantineCap(0.9, 2) == 1);
  CHECK(QuarantineCap(0.1, 3) == 1);   // at least one of three
  CHECK(QuarantineCap(0.0, 3) == 1);
  CHECK(QuarantineCap(0.1, 10) == 1);
  CHECK(QuarantineCap(0.1, 35) == 3);
  CHECK(QuarantineCap(0.5, 5) == 2);   // half of 5, rounded down
  CHECK(QuarantineCap(1.0, 10) == 5);  // never more than half
}

TEST_CASE("quarantine is refused beyond the cap and release frees the executor") {
  CoreOptions o;
  o.placement = "first_free";  // quarantine as proposed (expected_finish: placement_expected_finish_test.cpp)
  StateFixture f(o);  // max_quarantined_share 0.1
  std::vector<ExecutorId> e;
  for (int i = 0; i < 4; ++i) e.push_back(f.Exec(1));
  f.gate.Apply(Proposal::Quarantine(e[0], "slow"), "test");
  f.gate.Apply(Proposal::Quarantine(e[1], "slow too"), "test");  // over the cap of 1
  f.gate.Apply(Proposal::Quarantine(e[0], "again"), "test");     // already
  f.gate.Apply(Proposal::Quarantine(99, "gone"), "test");        // unknown
  auto changes = f.Commands<ExecutorChangedCmd>();
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].executor == e[0]);
  CHECK(changes[0].change == ExecutorChangedCmd::Change::kQuarantined);
  CHECK(changes[0].reason == "slow");
  CHECK(f.s.executors.at(e[0]).quarantined);
  CHECK_FALSE(f.s.executors.at(e[1]).quarantined);

  core::Job& job = f.Job(1);
  CHECK(f.place.PickFree(job, 0, false) == e[1]);  // e[0] is kept free of new work

  f.s.dirty = false;
  f.gate.Apply(Proposal::Release(e[0], "recovered"), "test");
  f.gate.Apply(Proposal::Release(e[1], "never quarantined"), "test");
  changes = f.Commands<ExecutorChangedCmd>();
  REQUIRE(changes.size() == 2);
  CHECK(changes[1].change == ExecutorChangedCmd::Change::kReleased);
  CHECK_FALSE(f.s.executors.at(e[0]).quarantined);
  CHECK(f.s.dirty);
  CHECK(f.s.free.back() == e[0]);  // back on the free list
  f.gate.Apply(Proposal::Quarantine(e[1], "now there is room"), "test");
  CHECK(f.s.executors.at(e[1]).quarantined);
}

TEST_CASE("a copy is launched on a free executor that does not run the task") {
  StateFixture f;
  ExecutorId a = f.Exec(1), b = f.Exec(1), c = f.Exec(1);
  core::Job& job = f.Job(1);
  f.Launch(job, 0, a);
  f.gate.ApplyAll({Proposal::LaunchCopy(job.id, 0, "slow", c)}, "test");
  auto launches = f.Commands<LaunchCmd>();
  REQUIRE(launches.size() == 2);
  CHECK(launches[1].executor == c);  // the preferred executor
  CHECK(launches[1].copy);
  CHECK(job.copies == 1);
  CHECK(job.tasks[0].live == 2);
  (void)b;
}

TEST_CASE("a copy is refused when the redundancy budget is spent") {
  CoreOptions o;
  o.redundancy_budget = 0.1;  // 10 slots: 1 copy
  o.min_copies = 1;
  StateFixture f(o);
  for (int i = 0; i < 10; ++i) f.Exec(1);
  core::Job& job = f.Job(3);
  for (TaskIndex t = 0; t < 3; ++t) f.Launch(job, t, static_cast<ExecutorId>(t + 1));
  REQUIRE(f.s.CopiesAllowed() == 1);
  f.gate.Apply(Proposal::LaunchCopy(job.id, 0, "first"), "test");
  CHECK(job.copies == 1);
  CHECK(f.s.CopiesAllowed() == 0);
  f.gate.Apply(Proposal::LaunchCopy(job.id, 1, "second"), "test");
  CHECK(job.copies == 1);
  CHECK(f.Commands<LaunchCmd>().size() == 4);  // 3 first attempts + 1 copy
}

TEST_CASE("copies are refused for tasks that do not run, and for jobs or tasks that do not exist") {
  StateFixture f;
  f.Exec(4);
  f.Exec(4);
  core::Job& job = f.Job(2);
  f.Launch(job, 0, 1);
  f.gate.Apply(Proposal::LaunchCopy(job.id, 1, "never launched"), "test");
  f.gate.Apply(Proposal::LaunchCopy(job.id, 7, "no such task"), "test");
  f.gate.Apply(Proposal::LaunchCopy(99, 0, "no such job"), "test");
  CHECK(job.copies == 0);
  f.gate.Apply(Proposal::LaunchCopy(job.id, 0, "ok"), "test");
  CHECK(job.copies == 1);
}

TEST_CASE("cancelling a task's only attempt restarts it at once on the slot it freed") {
  StateFixture f;
  ExecutorId a = f.Exec(1);
  core::Job& job = f.Job(1);
  AttemptId id = f.Launch(job, 0, a);
  f.gate.Apply(Proposal::CancelAttempt(id, "restart"), "test");
  f.gate.Apply(Proposal::CancelAttempt(id, "twice"), "test");  // already gone: ignored
  auto cancels = f.Commands<CancelCmd>();
  REQUIRE(cancels.size() == 1);
  CHECK(cancels[0].attempt == id);
  CHECK(cancels[0].executor == a);
  auto launches = f.Commands<LaunchCmd>();
  REQUIRE(launches.size() == 2);
  CHECK(launches[1].executor == a);
  CHECK_FALSE(launches[1].copy);
  CHECK(f.s.counters.attempts_restart == 1);
  CHECK(f.s.attempts.size() == 1);
  CHECK(job.tasks[0].phase == core::TaskPhase::kActive);  // its retry entry is stale now
  CHECK(f.s.executors.at(a).used_slots == 1);
}

TEST_CASE("a cancelled task with no free slot to restart on waits in its job's retry queue") {
  StateFixture f;
  ExecutorId a = f.Exec(1);
  core::Job& job = f.Job(1);
  AttemptId id = f.Launch(job, 0, a);
  f.s.executors.at(a).quarantined = true;  // the only slot may take no work
  f.gate.Apply(Proposal::CancelAttempt(id, "restart elsewhere"), "test");
  CHECK(f.Commands<LaunchCmd>().size() == 1);
  CHECK(f.s.attempts.empty());
  CHECK(job.tasks[0].phase == core::TaskPhase::kWaiting);
  CHECK(job.retry.front() == 0);
  CHECK(f.s.executors.at(a).used_slots == 0);
}

TEST_CASE("clone-at-launch is recorded on the job and capped at 8 copies") {
  StateFixture f;
  core::Job& job = f.Job(1);
  f.gate.Apply(Proposal::CloneAtLaunch(job.id, 2, "small job"), "test");
  CHECK(job.clone_copies == 2);
  f.gate.Apply(Proposal::CloneAtLaunch(job.id, 50, "greedy"), "test");
  CHECK(job.clone_copies == 8);
  f.gate.Apply(Proposal::CloneAtLaunch(99, 2, "no such job"), "test");
}
