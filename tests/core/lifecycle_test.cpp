// Attempt and job lifecycle: launch, end, drop, finish, retention.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core_harness.h"
#include "state_fixture.h"

using namespace tailcut;
using tailcut::testing::Recorder;
using tailcut::testing::StateFixture;

TEST_CASE("launches take slots, get ids in order and are announced") {
  StateFixture f;
  ExecutorId a = f.Exec(2, 1);
  JobDef d;
  d.tasks.resize(2);
  d.tasks[0].kernel = "k";
  d.tasks[0].cpu_slots = 2;
  d.tasks[1].kernel = "g";
  d.tasks[1].gpus = 1;
  core::Job& job = f.life.AddJob(d);
  CHECK(job.needed == 2);
  CHECK(job.def.max_attempts == f.s.opt.max_attempts);
  f.life.Launch(job, 1, a, false);
  f.life.Launch(job, 0, a, false);
  auto launches = f.Commands<LaunchCmd>();
  REQUIRE(launches.size() == 2);
  CHECK(launches[0].attempt == 1);
  CHECK(launches[0].task == 1);
  CHECK(launches[1].attempt == 2);
  const core::ExecutorState& e = f.s.executors.at(a);
  CHECK(e.used_slots == 3);  // may exceed slots: queued attempts (pipelining)
  CHECK(e.used_gpus == 1);
  CHECK(job.running == 2);
  CHECK(job.tasks[0].phase == core::TaskPhase::kActive);
}

TEST_CASE("ending an attempt unlinks it, frees its slot and reports it") {
  StateFixture f;
  Recorder rec;
  f.s.observers.push_back(&rec);
  ExecutorId a = f.Exec(1), b = f.Exec(1), c = f.Exec(1);
  core::Job& job = f.Job(1);
  f.clock.Set(1);
  AttemptId x = f.Launch(job, 0, a);
  AttemptId y = f.Launch(job, 0, b, true);
  AttemptId z = f.Launch(job, 0, c, true);
  CHECK(f.s.extra_live == 2);
  f.s.attempts.at(y).started = 2;
  f.clock.Set(5);
  f.life.EndAttempt(f.s.attempts.at(y), AttemptOutcome::kFailed, 0);  // the middle of the live list
  CHECK(job.tasks[0].live == 2);
  CHECK(f.s.extra_live == 1);
  CHECK(f.s.executors.at(b).used_slots == 0);
  CHECK(std::count(f.s.free.begin(), f.s.free.end(), b) == 1);  // listed once, still
  REQUIRE(rec.records.size() == 1);
  CHECK(rec.records[0].attempt == y);
  CHECK(rec.records[0].outcome == AttemptOutcome::kFailed);
  CHECK(rec.records[0].run_s == 3);  // from start to now when none is given
  CHECK(rec.records[0].copy);
  f.life.EndLiveAttempts(job, 0, AttemptOutcome::kSuperseded);
  auto cancels = f.Commands<CancelCmd>();
  REQUIRE(cancels.size() == 2);
  CHECK(cancels[0].attempt == z);  // newest first
  CHECK(cancels[1].attempt == x);
  CHECK(job.tasks[0].live_head == 0);
  CHECK(f.s.extra_live == 0);
  CHECK(f.s.attempts.empty());
}

TEST_CASE("a dropped attempt requeues its task only when nothing else runs it") {
  StateFixture f;
  ExecutorId a = f.Exec(1), b = f.Exec(1);
  core::Job& job = f.Job(1);
  AttemptId x = f.Launch(job, 0, a);
  AttemptId y = f.Launch(job, 0, b, true);
  f.life.DropAttempt(x, AttemptOutcome::kExecutorLost, 0, "executor restarted");
  CHECK(job.retry.empty());
  CHECK(job.tasks[0].phase == core::TaskPhase::kActive);
  f.life.DropAttempt(y, AttemptOutcome::kExecutorLost, 0, "");
  CHECK(job.tasks[0].phase == core::TaskPhase::kWaiting);
  CHECK(job.retry.size() == 1);
}

TEST_CASE("finishing a job cancels its attempts and old finished jobs are forgotten") {
  CoreOptions o;
  o.job_retention = 2;
  StateFixture f(o);
  Recorder rec;
  f.s.observers.push_back(&rec);
  ExecutorId a = f.Exec(4);
  core::Job& j1 = f.Job(2);
  JobId id1 = j1.id;
  f.Launch(j1, 0, a);
  f.Launch(j1, 1, a);
  f.life.FinishJob(j1, JobState::kFailed, "broken");
  CHECK(f.Commands<CancelCmd>().size() == 2);
  auto fin = f.Commands<JobFinishedCmd>();
  REQUIRE(fin.size() == 1);
  CHECK(fin[0].state == JobState::kFailed);
  CHECK(fin[0].reason == "broken");
  REQUIRE(rec.finished.size() == 1);
  CHECK(rec.finished[0].reason == "broken");
  CHECK(rec.Count(AttemptOutcome::kCancelled) == 2);
  CHECK(f.s.running_jobs.empty());
  CHECK(f.s.executors.at(a).used_slots == 0);

  JobId id2 = f.Job(1).id;
  f.life.FinishJob(f.s.jobs.at(id2), JobState::kCancelled, "");
  CHECK(f.s.FindJob(id1));
  JobId id3 = f.Job(1).id;
  f.life.FinishJob(f.s.jobs.at(id3), JobState::kSucceeded, "");
  CHECK_FALSE(f.s.FindJob(id1));  // beyond job_retention
  CHECK(f.s.FindJob(id2));
  CHECK(core::MakeStatusInfo(f.s.jobs.at(id3)).state == JobState::kSucceeded);
}

TEST_CASE("a joining executor wakes the jobs parked for want of one") {
  StateFixture f;
  core::Job& job = f.Job(2);
  REQUIRE(f.place.PopRunnable(*job.owner) == &job);
  f.place.Park(job, 0);  // the pump found no executor for it
  CHECK_FALSE(job.in_runnable);
  f.s.dirty = false;
  ExecutorId e = f.Exec(3);
  CHECK(job.in_runnable);
  CHECK(f.s.owner_book.Entries() == 1);
  CHECK(f.s.dirty);
  CHECK(f.s.total_slots == 3);
  CHECK(f.s.free.back() == e);
  CHECK(job.parked == nullptr);
  CHECK(f.s.parked.empty());
}

// An executor whose attempts are always beaten by copies never commits: what
// it ran before being superseded is the only evidence of how slow it is,
// and without it placement would keep giving it work (docs/PREDICTORS.md).
TEST_CASE("attempts beaten by copies teach the predictors their executor is slow") {
  StateFixture f;
  ExecutorId fast = f.Exec(1), slow = f.Exec(1);
  double t = 0;
  for (int i = 0; i < 40; ++i) {  // the class's typical run: ~1 s
    AttemptRecord r;
    r.task_class = "sleep";
    r.executor = fast;
    r.started = t;
    r.run_s = 0.9 + 0.05 * (i % 5);
    r.finished = t + r.run_s;
    r.outcome = AttemptOutcome::kCommitted;
    f.s.predictors->Observe(r);
    t += 1;
  }
  REQUIRE(f.s.predictors->SpeedFactor(slow) == 1.0);
  for (int round = 0; round < 12; ++round) {
    core::Job& job = f.Job(1);
    f.clock.Set(t);
    AttemptId beaten = f.Launch(job, 0, slow);
    f.s.attempts.at(beaten).started = t;
    f.clock.Set(t + 1.0);
    AttemptId copy = f.Launch(job, 0, fast, true);
    f.s.attempts.at(copy).started = t + 1.0;
    f.clock.Set(t += 5.0);  // the copy commits; the original has run 5 s
    f.life.EndAttempt(f.s.attempts.at(copy), AttemptOutcome::kCommitted, 1.0);
    f.life.EndLiveAttempts(job, 0, AttemptOutcome::kSuperseded);
  }
  CHECK(f.s.predictors->SpeedFactor(slow) >= 3.0);
  CHECK(f.s.predictors->Health(slow).state == NodeHealth::kFailSlow);
  CHECK(f.s.predictors->SpeedFactor(fast) < 1.5);  // its commits were typical
}
