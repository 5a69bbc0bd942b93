// Issue #10 in the core: tasks that crash their executors, time limits, and
// executors that come back with the attempts they still run.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core_harness.h"

using namespace tailcut;
using tailcut::testing::CoreHarness;

namespace {

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Starts every live attempt.
void StartAll(CoreHarness& h) {
  for (auto& [id, l] : h.live) h.core.AttemptStarted(id);
}

}  // namespace

TEST_CASE("reliability: a task that keeps taking down its executor fails the job") {
  CoreHarness h;
  for (int i = 0; i < 6; ++i) h.Exec(1);
  JobDef j = CoreHarness::Fanout(1);
  j.max_attempts = 3;
  JobId id = h.Submit(j);
  int losses = 0;
  while (!h.finished.count(id) && losses < 10) {
    REQUIRE(h.live.size() == 1);
    StartAll(h);
    ExecutorId e = h.live.begin()->second.executor;
    h.live.clear();
    h.core.RemoveExecutor(e, true, "no heartbeat");
    ++losses;
    h.Drain();
  }
  REQUIRE(h.finished.count(id));
  CHECK(h.finished[id].state == JobState::kFailed);
  // Each loss is a failed attempt: max_attempts executors, not the fleet.
  CHECK(losses == 3);
  CHECK(Contains(h.finished[id].reason, "task 0 failed 3 times"));
  CHECK(Contains(h.finished[id].reason, "its executor was lost while it held the attempt"));
  CHECK(h.core.JobStatus(id)->failed_attempts == 3);
}

TEST_CASE("reliability: an executor loss counts whether or not the attempt's start was reported") {
  CoreHarness h;
  ExecutorId a = h.Exec(1), b = h.Exec(1);
  JobId id = h.Submit(CoreHarness::Fanout(2));
  REQUIRE(h.live.size() == 2);
  h.core.AttemptStarted(h.LiveOn(a).front());  // b's attempt never starts
  h.live.clear();
  h.core.RemoveExecutor(a, true, "crash");
  h.core.RemoveExecutor(b, true, "crash");
  h.Drain();
  CHECK(h.core.JobStatus(id)->failed_attempts == 2);
  // A clean goodbye never counts.
  ExecutorId c = h.Exec(2);
  h.Drain();
  REQUIRE(h.live.size() == 2);
  h.live.clear();
  h.core.RemoveExecutor(c, false, "goodbye");
  h.Drain();
  CHECK(h.core.JobStatus(id)->failed_attempts == 2);
  h.Exec(2);
  h.Drain();
  while (!h.live.empty()) h.Finish(h.live.begin()->first);
  REQUIRE(h.finished.count(id));
  CHECK(h.finished[id].state == JobState::kSucceeded);
}

TEST_CASE("reliability: an attempt past task_timeout_s is cancelled and counts as failed") {
  CoreOptions o;
  o.task_timeout_s = 5;
  o.lost_after_s = 0;
  CoreHarness h(o);
  ExecutorId e = h.Exec(1);
  JobDef j = CoreHarness::Fanout(1);
  j.max_attempts = 2;
  JobId id = h.Submit(j);
  AttemptId first = h.live.begin()->first;
  h.core.AttemptStarted(first);
  h.Pass(4.9);
  CHECK(h.cancels.empty());
  h.Pass(0.2);
  REQUIRE(h.cancels.size() == 1);
  CHECK(h.cancels[0].attempt == first);
  CHECK(h.cancels[0].executor == e);
  CHECK(h.core.JobStatus(id)->failed_attempts == 1);
  REQUIRE(h.live.size() == 1);  // retried
  StartAll(h);
  h.Pass(6);
  REQUIRE(h.finished.count(id));
  CHECK(h.finished[id].state == JobState::kFailed);
  CHECK(Contains(h.finished[id].reason, "attempt exceeded its time limit of 5 s since launch"));
}

TEST_CASE("reliability: a task's own timeout_s wins over the default and attempts that finish in time are untouched") {
  CoreOptions o;
  o.task_timeout_s = 100;
  o.lost_after_s = 0;
  CoreHarness h(o);
  h.Exec(2);
  JobDef j = CoreHarness::Fanout(1);
  TaskDef quick = j.templ;
  quick.timeout_s = 1;
  j.tasks = {quick};
  h.Submit(j);
  REQUIRE(h.live.size() == 2);
  StartAll(h);
  AttemptId templ_attempt = 0;
  for (auto& [a, l] : h.live)
    if (l.task == 1) templ_attempt = a;
  h.Finish(templ_attempt);
  h.Pass(2);
  REQUIRE(h.cancels.size() == 1);
  CHECK(h.launches.size() == 3);  // task 0 again
}

TEST_CASE("reliability: a job past its timeout_s fails with the reason") {
  CoreOptions o;
  o.lost_after_s = 0;
  CoreHarness h(o);
  h.Exec(1);
  JobDef j = CoreHarness::Fanout(3);
  j.timeout_s = 10;
  auto id = h.core.SubmitJob(j);
  auto other = h.core.SubmitJob(CoreHarness::Fanout(1));  // no limit: runs on
  REQUIRE(id.ok());
  REQUIRE(other.ok());
  h.Drain();
  h.Finish(h.live.begin()->first);
  h.Pass(10);
  REQUIRE(h.finished.count(*id));
  CHECK(h.finished[*id].state == JobState::kFailed);
  CHECK(Contains(h.finished[*id].reason, "job exceeded timeout_s = 10"));
  CHECK(Contains(h.finished[*id].reason, "1 of 3 tasks committed"));
  CHECK_FALSE(h.finished.count(*other));
}

TEST_CASE("reliability: an executor that re-registers keeps its attempts (adoption)") {
  CoreHarness h;
  ExecutorId old = h.Exec(2);
  JobId id = h.Submit(CoreHarness::Fanout(2));
  REQUIRE(h.live.size() == 2);
  StartAll(h);
  auto held = h.live;
  // Same route registers again: remove + add + adopt, then one Pump.
  h.core.RemoveExecutor(old, false, "re-registered");
  ExecutorId now = h.ExecAs("e1", 2);  // the same identity
  for (auto& [a, l] : held) REQUIRE(h.core.AdoptAttempt(a, l.job, l.task, now, true).ok());
  h.Drain();
  CHECK(h.launches.size() == 2);  // nothing launched again
  CHECK(h.core.ExecutorOfAttempt(held.begin()->first) == now);
  for (auto& [a, l] : held) h.Finish(a);
  REQUIRE(h.finished.count(id));
  CHECK(h.finished[id].state == JobState::kSucceeded);
  CHECK(h.core.JobStatus(id)->attempts == 2);
  CHECK(h.core.JobStatus(id)->committed == 2);
}

TEST_CASE("reliability: adoption is refused for finished jobs and committed tasks") {
  CoreHarness h;
  ExecutorId e = h.Exec(2);
  JobId id = h.Submit(CoreHarness::Fanout(2));
  AttemptId a0 = h.launches[0].attempt, a1 = h.launches[1].attempt;
  h.Finish(a0);
  h.core.RemoveExecutor(e, false, "re-registered");
  ExecutorId e2 = h.ExecAs("e1", 2);
  CHECK_FALSE(h.core.AdoptAttempt(a0, id, 0, e2, true).ok());  // committed
  CHECK(h.core.AdoptAttempt(a1, id, 1, e2, true).ok());
  CHECK_FALSE(h.core.AdoptAttempt(999, id + 1, 0, e2, true).ok());  // no such job
  h.Drain();
  // The task was requeued by the removal; adoption made it live again, so
  // the requeued entry is stale: no launch.
  CHECK(h.launches.size() == 2);
}

TEST_CASE("reliability: a result that arrives while its executor was away commits exactly once") {
  CoreHarness h;
  JobDef j = CoreHarness::Fanout(2);
  j.stream_results = true;
  ExecutorId e = h.Exec(2);
  JobId id = h.Submit(j);
  AttemptId a0 = h.launches[0].attempt;
  h.core.RemoveExecutor(e, false, "re-registered");  // task 0 requeued
  h.live.clear();
  ExecutorId e2 = h.ExecAs("e1", 1);
  h.Drain();
  REQUIRE(h.live.size() == 1);  // one task relaunched on e2
  CHECK(h.core.CommitOrphanResult(id, 0, a0, e2, "out", 1.0));
  CHECK_FALSE(h.core.CommitOrphanResult(id, 0, a0, e2, "out", 1.0));  // delivered twice
  h.Drain();
  REQUIRE(h.commits.size() == 1);
  CHECK(h.commits[0].task == 0);
  CHECK(h.commits[0].attempt == a0);
  CHECK(h.core.JobStatus(id)->committed == 1);
  // If task 0's relaunch was the live one, it was cancelled as superseded.
  for (auto& [a, l] : h.live)
    if (l.task == 0) FAIL("task 0 still has a live attempt");
  while (!h.live.empty()) h.Finish(h.live.begin()->first);
  h.Drain();
  REQUIRE(h.finished.count(id));
  CHECK(h.finished[id].state == JobState::kSucceeded);
  CHECK(h.commits.size() == 2);
  CHECK_FALSE(h.core.CommitOrphanResult(id, 1, 12345, e2, "late", 1.0));  // job done
}

TEST_CASE("reliability: a task with side effects never has two live attempts, even through adoption") {
  CoreHarness h;
  ExecutorId a = h.Exec(1, 0, {"shell"});
  h.Exec(1, 0, {"shell"});
  JobId id = h.Submit(CoreHarness::Fanout(1, "shell"));
  REQUIRE(h.live.size() == 1);
  AttemptId first = h.live.begin()->first;
  StartAll(h);
  // Its executor goes silent: the task runs again elsewhere (max_attempts
  // allows it), then the old executor comes back still holding the first.
  h.live.erase(first);
  h.core.RemoveExecutor(a, true, "lost");
  h.Drain();
  REQUIRE(h.live.size() == 1);
  ExecutorId back = h.ExecAs("e1", 1, {"shell"});  // the same executor, so only the side-effect rule refuses
  Status adopt = h.core.AdoptAttempt(first, id, 0, back, true);
  CHECK_FALSE(adopt.ok());  // cancelled instead: one live attempt
  CHECK(Contains(adopt.message(), "not idempotent"));
  CHECK(h.core.JobStatus(id)->running == 1);
}

// After a restart an attempt launched before the crash may still run. A
// task that is not declared idempotent is not launched again until its
// executor has had lost_after_s to register and have the attempt adopted
// (restore.cpp).
TEST_CASE("reliability: after a restart, a job with side effects waits lost_after_s for its executors to return") {
  CoreOptions o;
  o.lost_after_s = 2;
  CoreHarness h(o);
  h.core.ReserveIds(10, 1000, 1);  // attempts below 1000 ran before the restart
  JobDef side = CoreHarness::Fanout(2, "shell");
  JobDef pure = CoreHarness::Fanout(1);
  pure.idempotent = true;
  REQUIRE(h.core.RestoreJob(5, side, 0, {}).ok());
  REQUIRE(h.core.RestoreJob(6, pure, 0, {}).ok());
  ExecutorId e = h.Exec(4, 0, {"shell", "sleep"});
  h.Drain();
  auto launched = [&](JobId j) {
    return std::count_if(h.launches.begin(), h.launches.end(), [&](const LaunchCmd& l) { return l.job == j; });
  };
  CHECK(launched(6) == 1);  // declared idempotent: runs at once
  CHECK(launched(5) == 0);
  REQUIRE(h.core.AdoptAttempt(40, 5, 0, e, true).ok());  // its executor is back with task 0
  h.Pass(1.0);
  CHECK(launched(5) == 0);
  h.core.ExecutorSeen(e);
  h.Pass(1.5);  // past lost_after_s: task 1, which nothing runs, is launched; task 0 is not run twice
  REQUIRE(launched(5) == 1);
  CHECK(std::find_if(h.launches.begin(), h.launches.end(), [](const LaunchCmd& l) { return l.job == 5; })->task == 1);
}

TEST_CASE("reliability: a stall of the restarted scheduler does not count against its executors' return") {
  CoreOptions o;
  o.lost_after_s = 2;
  CoreHarness h(o);
  h.core.ReserveIds(10, 1000, 1);
  REQUIRE(h.core.RestoreJob(5, CoreHarness::Fanout(1, "shell"), 0, {}).ok());
  ExecutorId e = h.Exec(4, 0, {"shell"});
  h.Drain();
  auto launched = [&] {
    return std::count_if(h.launches.begin(), h.launches.end(), [](auto& l) { return l.job == 5; });
  };
  // The loop could not listen for 3 s (a slow start, a starved core):
  // executors could not have registered meanwhile, so the hold moves on.
  h.clock.Advance(3);
  h.core.DiscountStall(3);
  h.core.ExecutorSeen(e);  // as the server counts its executors after a stall
  h.Pass(1.5);
  CHECK(launched() == 0);
  h.core.ExecutorSeen(e);
  h.Pass(1.0);  // 2.5 s of listening: past lost_after_s
  CHECK(launched() == 1);
}

TEST_CASE("reliability: a restored job counts the earlier run's attempts that commit, come back or were journaled") {
  CoreHarness h;
  h.core.ReserveIds(10, 1000, 1);  // attempts below 1000 ran before the restart
  REQUIRE(h.core.RestoreJob(5, CoreHarness::Fanout(3, "sleep"), 0, {CommittedOutput{0, 7, 1, 0.5, "done"}}).ok());
  ExecutorId e = h.Exec(4, 0, {"sleep"});
  REQUIRE(h.core.JobStatus(5)->attempts == 1);  // the journaled commit's
  REQUIRE(h.core.AdoptAttempt(40, 5, 1, e, true).ok());
  CHECK(h.core.JobStatus(5)->attempts == 2);
  REQUIRE(h.core.AdoptAttempt(40, 5, 1, e, true).ok());  // adopted again (a resend): counted once
  CHECK(h.core.JobStatus(5)->attempts == 2);
  REQUIRE(h.core.CommitOrphanResult(5, 2, 41, e, "out", 1.0));
  CHECK(h.core.JobStatus(5)->attempts == 3);
  CHECK(h.core.JobStatus(5)->committed == 2);
}
