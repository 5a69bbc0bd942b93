// Placement: which executor a task or a copy goes to, queueing behind busy
// executors for tiny tasks, and the runnable-job queue's bookkeeping.
#include <catch2/catch.hpp>

#include "state_fixture.h"

using namespace tailcut;
using tailcut::testing::AvoidPolicy;
using tailcut::testing::StateFixture;

TEST_CASE("free slots are taken in the order executors became free") {
  StateFixture f;
  ExecutorId a = f.Exec(1), b = f.Exec(2), c = f.Exec(1);
  core::Job& job = f.Job(6);
  CHECK(f.place.PickFree(job, 0, false) == a);
  f.Launch(job, 0, a);
  CHECK(f.place.PickFree(job, 1, false) == b);
  f.Launch(job, 1, b);
  CHECK(f.place.PickFree(job, 2, false) == b);  // b still has a slot
  f.Launch(job, 2, b);
  CHECK(f.place.PickFree(job, 3, false) == c);
  f.Launch(job, 3, c);
  CHECK(f.place.PickFree(job, 4, false) == 0);  // all full
  // a frees up first, then c: that order is kept.
  f.life.EndAttempt(f.s.attempts.at(1), AttemptOutcome::kCommitted, 1);
  f.life.EndAttempt(f.s.attempts.at(4), AttemptOutcome::kCommitted, 1);
  CHECK(std::vector<ExecutorId>(f.s.free.begin(), f.s.free.end()) == std::vector<ExecutorId>{a, c});
  CHECK(f.place.PickFree(job, 4, false) == a);
}

TEST_CASE("placement respects gpus, kernels and quarantine") {
  StateFixture f;
  ExecutorId cpu = f.Exec(4);
  ExecutorId gpu = f.Exec(4, 1, {"matmul"});
  JobDef d;
  d.tasks.resize(2);
  d.tasks[0].kernel = "matmul";
  d.tasks[0].gpus = 1;
  d.tasks[1].kernel = "sleep";
  core::Job& job = f.life.AddJob(d);
  CHECK(f.place.PickFree(job, 0, false) == gpu);
  CHECK(f.place.PickFree(job, 1, false) == cpu);  // gpu offers matmul only
  f.Launch(job, 0, gpu);
  CHECK(f.place.PickFree(job, 0, true) == 0);  // the one gpu is taken
  f.s.executors.at(cpu).quarantined = true;
  CHECK(f.place.PickFree(job, 1, false) == 0);
}

TEST_CASE("copies never go where the task already runs, and a preferred executor wins if it fits") {
  StateFixture f;
  ExecutorId a = f.Exec(2), b = f.Exec(2), c = f.Exec(2);
  core::Job& job = f.Job(2);
  f.Launch(job, 0, a);
  CHECK(f.place.RunsTask(job, 0, a));
  CHECK_FALSE(f.place.RunsTask(job, 0, b));
  CHECK(f.place.PickFree(job, 0, false) == a);  // a first attempt may share
  CHECK(f.place.PickFree(job, 0, true) == b);   // a copy may not
  CHECK(f.place.PickFree(job, 0, true, c) == c);
  CHECK(f.place.PickFree(job, 0, true, a) == b);  // preferred but already runs it
}

TEST_CASE("an executor a policy avoids is a fallback for first attempts, never for copies") {
  PolicyChain chain;
  chain.push_back(std::make_unique<AvoidPolicy>(1));
  StateFixture f({}, std::move(chain));
  ExecutorId a = f.Exec(1), b = f.Exec(1);
  REQUIRE(a == 1);
  core::Job& job = f.Job(3);
  CHECK(f.place.PolicyAvoids(a));
  CHECK(f.place.PickFree(job, 0, false) == b);
  f.Launch(job, 0, b);
  CHECK(f.place.PickFree(job, 1, false) == a);  // nothing else has room
  CHECK(f.place.PickFree(job, 0, true) == 0);
}

TEST_CASE("tiny tasks queue per slot only after enough commits") {
  CoreOptions o;
  o.pipeline_s = 0.005;
  o.max_queue_per_slot = 100;
  StateFixture f(o);
  core::Job& job = f.Job(10);
  job.typical_run_s = 0.001;
  job.committed = 3;
  CHECK(f.place.QueuePerSlot(job) == 0);  // one lucky fast task is not enough
  job.committed = 4;
  CHECK(f.place.QueuePerSlot(job) == 5);  // 5 ms of work per slot
  job.typical_run_s = 0.00001;
  CHECK(f.place.QueuePerSlot(job) == 100);  // capped
  job.typical_run_s = 0.01;
  CHECK(f.place.QueuePerSlot(job) == 0);  // not tiny
}

TEST_CASE("queueing behind busy executors goes round-robin from the last pick") {
  StateFixture f;
  ExecutorId a = f.Exec(1), b = f.Exec(1), c = f.Exec(1);
  core::Job& job = f.Job(12);
  f.Launch(job, 0, a);
  f.Launch(job, 1, b);
  f.Launch(job, 2, c);
  std::vector<ExecutorId> picks;
  for (TaskIndex t = 3; t < 9; ++t) {
    ExecutorId e = f.place.PickQueue(job, t, 1);  // one queued attempt per slot
    picks.push_back(e);
    if (e) f.Launch(job, t, e);
  }
  CHECK(picks == std::vector<ExecutorId>{a, b, c, 0, 0, 0});
  f.s.rr_cursor = b;
  f.life.EndAttempt(f.s.attempts.at(1), AttemptOutcome::kCommitted, 1);  // a has room again
  f.life.EndAttempt(f.s.attempts.at(3), AttemptOutcome::kCommitted, 1);  // c too
  CHECK(f.place.PickQueue(job, 9, 1) == c);  // the cursor was at b
  CHECK(f.s.rr_cursor == c);
}

TEST_CASE("the runnable queue counts its pipelining entries exactly") {
  StateFixture f;
  core::Job& j1 = f.Job(4);  // runnable on submit
  core::Job& j2 = f.Job(4);
  core::OwnerState& owner = *j1.owner;  // both have the fixture's owner
  REQUIRE(j2.owner == &owner);
  CHECK(f.s.owner_book.Entries() == 2);
  f.place.MakeRunnable(j1);  // already queued: no second entry
  CHECK(f.s.owner_book.Entries() == 2);
  j1.typical_run_s = 0.0001;
  j1.committed = 4;
  f.place.UpdatePipelining(j1);
  CHECK(j1.pipelines);
  CHECK(f.s.runnable_pipelining == 1);
  CHECK(f.place.PopRunnable(owner) == &j1);  // in submission order
  CHECK(f.place.PopRunnable(owner) == &j2);
  f.place.PushRunnable(j2);
  CHECK(f.s.runnable_pipelining == 0);
  f.place.PushRunnable(j1);
  CHECK(f.s.runnable_pipelining == 1);
  j1.typical_run_s = 1;
  f.place.UpdatePipelining(j1);
  CHECK_FALSE(j1.pipelines);
  CHECK(f.s.runnable_pipelining == 0);
}

TEST_CASE("a requeued task waits in its job's retry queue and wakes the job") {
  StateFixture f;
  ExecutorId a = f.Exec(1);
  core::Job& job = f.Job(2);
  REQUIRE(f.place.PopRunnable(*job.owner) == &job);
  job.in_runnable = false;
  f.s.dirty = false;
  f.Launch(job, 1, a);
  f.life.EndAttempt(f.s.attempts.at(1), AttemptOutcome::kExecutorLost, 0);
  f.place.Requeue(job, 1);
  CHECK(job.tasks[1].phase == core::TaskPhase::kWaiting);
  CHECK(std::vector<TaskIndex>(job.retry.begin(), job.retry.end()) == std::vector<TaskIndex>{1});
  CHECK(job.in_runnable);
  CHECK(f.s.owner_book.Entries() == 1);
  CHECK(f.s.dirty);
}

TEST_CASE("queueing on a fleet whose queues are full looks only at executors with room") {
  StateFixture f;
  constexpr int kExecutors = 1000;
  std::vector<ExecutorId> ids;
  for (int i = 0; i < kExecutors; ++i) ids.push_back(f.Exec(1));
  core::Job& job = f.Job(4 * kExecutors);
  TaskIndex t = 0;
  std::vector<AttemptId> on_700;
  for (ExecutorId e : ids)
    for (int k = 0; k < 2; ++k) {  // one running, one queued: full at one queued per slot
      AttemptId a = f.Launch(job, t++, e);
      if (e == ids[700]) on_700.push_back(a);
    }
  uint64_t looks = f.place.queue_looks();
  CHECK(f.place.PickQueue(job, t, 1) == 0);
  CHECK(f.place.queue_looks() == looks);  // none has room: none looked at (a walk passed all 1,000)
  f.life.EndAttempt(f.s.attempts.at(on_700[0]), AttemptOutcome::kCommitted, 1);
  CHECK(f.place.PickQueue(job, t, 1) == ids[700]);
  CHECK(f.place.queue_looks() == looks + 1);
  // Two queued per slot: every executor has room, and the round robin goes
  // on after the one picked last.
  CHECK(f.place.PickQueue(job, t, 2) == ids[701]);
  CHECK(f.place.queue_looks() == looks + 2);
}
