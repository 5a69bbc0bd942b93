// The ClusterView over the core's state: what policies see.
#include <catch2/catch.hpp>

#include "state_fixture.h"

using namespace tailcut;
using tailcut::testing::StateFixture;

TEST_CASE("the view lists running jobs and executors in id order") {
  StateFixture f;
  ExecutorId a = f.Exec(2), b = f.Exec(1, 1);
  core::Job& j1 = f.Job(3);
  core::Job& j2 = f.Job(2);
  core::Job& j3 = f.Job(1);
  f.Launch(j1, 0, a);
  f.Launch(j1, 0, b, true);
  f.life.FinishJob(j2, JobState::kCancelled, "bye");

  std::vector<JobId> jobs;
  f.view.ForEachJob([&](const JobView& v) { jobs.push_back(v.id); });
  CHECK(jobs == std::vector<JobId>{j1.id, j3.id});

  JobView v;
  REQUIRE(f.view.FindJob(j1.id, &v));
  CHECK(v.tasks == 3);
  CHECK(v.unlaunched == 3);  // launched directly, not through the job's cursor
  CHECK(v.running == 2);
  CHECK(v.copies == 1);
  CHECK(v.needed == 3);
  CHECK(v.def == &j1.def);
  CHECK(f.view.FindJob(j2.id, &v));  // finished but retained
  CHECK_FALSE(f.view.FindJob(99, &v));

  std::vector<ExecutorView> execs;
  f.view.ForEachExecutor([&](const ExecutorView& e) { execs.push_back(e); });
  REQUIRE(execs.size() == 2);
  CHECK(execs[0].id == a);
  CHECK(execs[0].name == "e1");
  CHECK(execs[0].used_slots == 1);
  CHECK(execs[0].running == 1);
  CHECK(execs[1].id == b);
  CHECK(execs[1].gpus == 1);
  ExecutorView ev;
  REQUIRE(f.view.FindExecutor(b, &ev));
  CHECK(ev.slots == 1);
  CHECK_FALSE(f.view.FindExecutor(42, &ev));
  CHECK(f.view.TotalSlots() == 3);
  CHECK(f.view.Predictors() == f.s.predictors.get());
}

TEST_CASE("running attempts carry how many live attempts their task has") {
  StateFixture f;
  f.clock.Set(5);
  ExecutorId a = f.Exec(2), b = f.Exec(2);
  core::Job& job = f.Job(2);
  AttemptId first = f.Launch(job, 0, a);
  f.clock.Set(6);
  AttemptId copy = f.Launch(job, 0, b, true);
  AttemptId other = f.Launch(job, 1, a);
  f.s.attempts.at(first).started = 5.5;
  std::map<AttemptId, AttemptView> seen;
  f.view.ForEachRunningAttempt([&](const AttemptView& v) { seen[v.attempt] = v; });
  REQUIRE(seen.size() == 3);
  CHECK(seen[first].task_live == 2);
  CHECK(seen[copy].task_live == 2);
  CHECK(seen[copy].copy);
  CHECK(seen[copy].executor == b);
  CHECK(seen[other].task_live == 1);
  CHECK(seen[first].queued == 5);
  CHECK(seen[first].started == 5.5);
  CHECK(seen[other].started == -1);
}

TEST_CASE("median run time follows commits, and unknown jobs have none") {
  StateFixture f;
  core::Job& job = f.Job(5);
  CHECK(f.view.MedianRunTime(job.id) == 0);
  CHECK(f.view.CommittedRunTimes(99).empty());
  job.run_times = {5, 1, 3};
  CHECK(f.view.MedianRunTime(job.id) == 3);
  job.run_times.push_back(10);  // even count: the upper middle
  CHECK(f.view.MedianRunTime(job.id) == 5);
  CHECK(f.view.CommittedRunTimes(job.id) == std::vector<float>{5, 1, 3, 10});
  CHECK(f.view.MedianRunTime(99) == 0);
}

TEST_CASE("copies allowed: a share of total slots, at least min_copies, less the live extras") {
  CoreOptions o;
  o.redundancy_budget = 0.1;
  o.min_copies = 1;
  StateFixture f(o);
  CHECK(f.view.CopiesAllowed() == 1);  // no slots yet: min_copies
  for (int i = 0; i < 5; ++i) f.Exec(6);
  CHECK(f.view.TotalSlots() == 30);
  CHECK(f.view.CopiesAllowed() == 3);
  core::Job& job = f.Job(2);
  f.Launch(job, 0, 1);
  CHECK(f.view.CopiesAllowed() == 3);  // a first attempt is no copy
  f.Launch(job, 0, 2, true);
  f.Launch(job, 0, 3, true);
  CHECK(f.view.CopiesAllowed() == 1);
  f.Launch(job, 1, 4);
  f.Launch(job, 1, 5, true);
  CHECK(f.view.CopiesAllowed() == 0);
}
