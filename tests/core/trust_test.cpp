// Issue #22 in the core: results only for attempts handed out, every
// attempt ends, a poison task costs at most max_attempts executors, label
// matching in linear time.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <random>

#include "core_harness.h"

using namespace tailcut;
using tailcut::testing::CoreHarness;
using tailcut::testing::NoHeartbeats;

TEST_CASE("trust: a result from another executor for a live attempt is refused and the true one commits") {
  CoreHarness h(NoHeartbeats());
  ExecutorId x = h.ExecAs("x", 1);
  JobDef j = CoreHarness::Fanout(1);
  j.return_outputs = true;
  JobId id = h.Submit(j);
  REQUIRE(h.live.size() == 1);
  AttemptId a = h.live.begin()->first;
  REQUIRE(h.live.begin()->second.executor == x);
  ExecutorId y = h.ExecAs("y", 1);
  // Y claims X's attempt, as a Report and as a Register.undelivered result.
  CHECK_FALSE(h.core.AcceptsReport(y, a));
  CHECK_FALSE(h.core.CommitOrphanResult(id, 0, a, y, "forged", 1.0));
  CHECK_FALSE(h.core.AdoptAttempt(a, id, 0, y, true).ok());
  // An attempt id never issued, for a task nothing runs yet.
  JobId id2 = h.Submit(CoreHarness::Fanout(2));
  CHECK_FALSE(h.core.CommitOrphanResult(id2, 1, a + 1000, y, "forged", 1.0));
  CHECK_FALSE(h.core.AdoptAttempt(a + 1001, id2, 1, y, true).ok());
  CHECK_FALSE(h.core.AcceptsReport(y, a + 1002));
  CHECK(h.core.Counters().reports_refused == 6);
  h.Drain();
  CHECK(h.commits.empty());
  CHECK(h.core.ExecutorOfAttempt(a) == x);
  // An ended attempt's late result is ignored, not counted as forged.
  CHECK(h.core.AcceptsReport(x, a));
  h.Finish(a, 1.0, "true");
  CHECK_FALSE(h.core.AcceptsReport(x, a));
  CHECK(h.core.Counters().reports_refused == 6);
  auto out = h.core.JobOutputs(id);
  REQUIRE(out.ok());
  REQUIRE(out->size() == 1);
  CHECK((*out)[0].output == "true");
  CHECK((*out)[0].executor == x);
}

TEST_CASE("trust: an attempt held by an executor that left comes back only from the same identity") {
  CoreHarness h(NoHeartbeats());
  ExecutorId x = h.ExecAs("x", 2);
  JobId id = h.Submit(CoreHarness::Fanout(2));
  REQUIRE(h.live.size() == 2);
  AttemptId a0 = h.launches[0].attempt, a1 = h.launches[1].attempt;
  h.live.clear();
  h.core.RemoveExecutor(x, false, "re-registered");
  ExecutorId y = h.ExecAs("y", 1, {"noop"});    // another identity
  ExecutorId z = h.ExecAs("x", 1, {"noop"});    // x's identity, without the kernel
  CHECK_FALSE(h.core.CommitOrphanResult(id, 0, a0, y, "forged", 1.0));
  CHECK_FALSE(h.core.AdoptAttempt(a1, id, 1, y, true).ok());
  auto no_kernel = h.core.AdoptAttempt(a1, id, 1, z, true);
  CHECK_FALSE(no_kernel.ok());
  CHECK(no_kernel.message().find("kernel not offered") != std::string::npos);
  CHECK(h.core.Counters().reports_refused == 3);
  ExecutorId x2 = h.ExecAs("x", 2);
  // The right identity, but for another task than the attempt ran.
  CHECK_FALSE(h.core.CommitOrphanResult(id, 1, a0, x2, "wrong task", 1.0));
  CHECK(h.core.CommitOrphanResult(id, 0, a0, x2, "true", 1.0));
  CHECK(h.core.AdoptAttempt(a1, id, 1, x2, true).ok());
  h.Drain();
  CHECK(h.core.JobStatus(id)->committed == 1);
  CHECK(h.core.ExecutorOfAttempt(a1) == x2);
}

TEST_CASE("trust: after a restart, an earlier run's attempts are taken back and others are refused") {
  CoreHarness h(NoHeartbeats());
  const AttemptId earlier = (AttemptId{1} << 40) + 1, base = (AttemptId{2} << 40) + 1;
  h.core.ReserveIds(10, base, earlier);
  ExecutorId e = h.ExecAs("x", 2);
  JobDef def = CoreHarness::Fanout(3);
  REQUIRE(h.core.RestoreJob(5, def, 0, {}).ok());
  CHECK(h.core.AdoptAttempt(earlier + 7, 5, 0, e, true).ok());
  CHECK(h.core.CommitOrphanResult(5, 1, earlier + 8, e, "ok", 1.0));
  CHECK_FALSE(h.core.CommitOrphanResult(5, 2, earlier - 1, e, "forged", 1.0));  // before any run
  CHECK_FALSE(h.core.CommitOrphanResult(5, 2, base + 100, e, "forged", 1.0));   // this run's, never issued
  CHECK(h.core.Counters().reports_refused == 2);
}

// Issue 32: the journal names the identity each attempt went to, so after a
// restart another executor offering the kernel cannot take it over.
TEST_CASE("trust: after a restart, only the identity a journaled launch names adopts the attempt") {
  CoreOptions o;
  o.lost_after_s = 2;  // the restore hold: tasks that must not run twice wait for their executors
  CoreHarness h(o);
  const AttemptId earlier = (AttemptId{1} << 40) + 1, base = (AttemptId{2} << 40) + 1;
  h.core.ReserveIds(10, base, earlier);
  JobDef def = CoreHarness::Fanout(4);
  def.idempotent = false;
  REQUIRE(h.core.RestoreJob(5, def, 0, {{3, earlier + 3, 1, 1.0, {}}}).ok());  // task 3 committed
  std::vector<AttemptId> dropped = h.core.RestoreLaunches({{earlier + 7, 5, 0, "x"},
                                                           {earlier + 8, 5, 1, "x"},
                                                           {earlier + 9, 5, 3, "x"},   // its task committed
                                                           {earlier + 10, 6, 0, "x"},  // no such job
                                                           {base + 1, 5, 2, "x"}},     // not an earlier run's
                                                          earlier);
  CHECK(dropped == std::vector<AttemptId>{earlier + 9, earlier + 10, base + 1});
  // y offers the kernel and registers first, claiming x's attempts and one the journal never saw.
  ExecutorId y = h.ExecAs("y", 4);
  Status stolen = h.core.AdoptAttempt(earlier + 7, 5, 0, y, true);
  CHECK(stolen.code() == Status::Code::kPermissionDenied);
  CHECK_FALSE(h.core.CommitOrphanResult(5, 1, earlier + 8, y, "forged", 1.0));
  Status unknown = h.core.AdoptAttempt(earlier + 20, 5, 2, y, true);
  CHECK(unknown.message().find("the journal has no launch") != std::string::npos);
  CHECK(h.core.Counters().reports_refused == 3);
  h.Drain();
  CHECK(h.launches.empty());  // held for x until lost_after_s
  // x comes back: its attempt is adopted and its result commits; an unjournaled id is refused for x too.
  ExecutorId x = h.ExecAs("x", 4);
  REQUIRE(h.core.AdoptAttempt(earlier + 7, 5, 0, x, true).ok());
  CHECK(h.core.CommitOrphanResult(5, 1, earlier + 8, x, "true", 1.0));
  CHECK_FALSE(h.core.AdoptAttempt(earlier + 20, 5, 2, x, true).ok());
  CHECK(h.core.Counters().reports_refused == 4);
  CHECK(h.core.ExecutorOfAttempt(earlier + 7) == x);
  // Past the hold, the task nothing adopted (2) runs again, and only it.
  h.Pass(1.5);
  CHECK(h.launches.empty());
  h.core.ExecutorSeen(x);
  h.core.ExecutorSeen(y);
  h.Pass(1.0);
  REQUIRE(h.launches.size() == 1);
  CHECK(h.launches[0].task == 2);
  CHECK(h.launches[0].attempt >= base);
}

TEST_CASE("trust: an earlier run's attempts from before launches were journaled are taken from any identity") {
  CoreHarness h(NoHeartbeats());
  const AttemptId earlier = (AttemptId{1} << 40) + 1, journaled = (AttemptId{2} << 40) + 1,
                  base = (AttemptId{3} << 40) + 1;
  h.core.ReserveIds(10, base, earlier);
  REQUIRE(h.core.RestoreJob(5, CoreHarness::Fanout(3), 0, {}).ok());
  REQUIRE(h.core.RestoreLaunches({{journaled + 1, 5, 1, "x"}}, journaled).empty());
  ExecutorId y = h.ExecAs("y", 2);
  CHECK(h.core.AdoptAttempt(earlier + 1, 5, 0, y, true).ok());          // run 1 journaled no launches
  CHECK_FALSE(h.core.AdoptAttempt(journaled + 1, 5, 1, y, true).ok());  // run 2 gave it to x
  CHECK_FALSE(h.core.AdoptAttempt(journaled + 2, 5, 2, y, true).ok());  // run 2 never gave it out
  CHECK(h.core.Counters().reports_refused == 2);
}

TEST_CASE("trust: a silent executor's attempts time out by default, and it is quarantined") {
  CoreOptions o = NoHeartbeats();
  REQUIRE(o.attempt_timeout_ratio > 0);  // the default limit is on
  CoreHarness h(o);
  ExecutorId good = h.ExecAs("good", 1);
  // Teach the predictors the class's run time (0.1 s).
  JobId warm = h.Submit(CoreHarness::Fanout(10));
  while (!h.live.empty()) {
    h.clock.Advance(0.1);
    h.Finish(h.live.begin()->first, 0.1);
  }
  REQUIRE(h.finished.count(warm));
  ExecutorId silent = h.ExecAs("silent", 4);
  JobDef j = CoreHarness::Fanout(4);
  j.max_attempts = 2;
  JobId id = h.Submit(j);
  for (AttemptId a : h.LiveOn(good)) h.Finish(a, 0.1);
  std::vector<AttemptId> held = h.LiveOn(silent);
  REQUIRE(held.size() >= 3);  // never started, never answered
  REQUIRE(h.LiveOn(good).empty());
  // They had free slots and never started: the start limit, the start
  // floor (10 x 0.1 s is less), armed at launch.
  h.Pass(o.attempt_start_floor_s - 1);
  CHECK(h.core.Counters().attempts_timed_out == 0);
  h.Pass(2);
  CHECK(h.core.Counters().attempts_timed_out == held.size());
  for (AttemptId a : held) CHECK(h.core.ExecutorOfAttempt(a) != silent);
  auto execs = h.core.Executors();
  bool quarantined = false;
  for (auto& x : execs)
    if (x.id == silent) quarantined = x.quarantined;
  CHECK(quarantined);
  bool told = false;
  for (auto& c : h.exec_changes)
    told |= c.executor == silent && c.change == ExecutorChangedCmd::Change::kQuarantined;
  CHECK(told);
  // The good executor finishes the job.
  while (!h.live.empty()) {
    REQUIRE(h.live.begin()->second.executor == good);
    h.Finish(h.live.begin()->first, 0.1);
  }
  REQUIRE(h.finished.count(id));
  CHECK(h.finished[id].state == JobState::kSucceeded);
}

TEST_CASE("trust: an unknown task class gets the ceiling") {
  CoreOptions o = NoHeartbeats();
  o.attempt_timeout_ceiling_s = 100;
  CoreHarness h(o);
  h.ExecAs("x", 1);
  JobId id = h.Submit(CoreHarness::Fanout(1, "noop"));
  h.core.AttemptStarted(h.live.begin()->first);  // started: the run limit applies
  h.Pass(99);
  CHECK(h.core.Counters().attempts_timed_out == 0);
  h.Pass(2);
  CHECK(h.core.Counters().attempts_timed_out == 1);
  CHECK(h.core.JobStatus(id)->failed_attempts == 1);
  CHECK(h.core.JobStatus(id)->state == JobState::kRunning);  // retried
}

// A poison task crashes whichever executor it is handed to, sometimes before
// its `started` reaches the scheduler. In 20 rounds of 20 executors it must
// fail its job with at most max_attempts executor losses.
TEST_CASE("trust: a poison task fails its job after at most max_attempts executor losses, 20 of 20 rounds") {
  std::mt19937 rng(22);
  for (int round = 0; round < 20; ++round) {
    CoreHarness h;  // daemon defaults: count_executor_loss = true
    std::vector<ExecutorId> fleet;
    for (int i = 0; i < 20; ++i) fleet.push_back(h.Exec(2));
    JobDef j = CoreHarness::Fanout(30);
    j.max_attempts = 1 + round % 3;
    TaskDef poison = j.templ;
    poison.kernel = "spin";
    j.tasks = {poison};
    JobId id = h.Submit(j);
    int losses = 0;
    while (!h.finished.count(id) && losses <= 20) {
      ExecutorId victim = 0;
      for (auto& [a, l] : h.live)
        if (l.task == 0) victim = l.executor;
      if (!victim) {  // the poison task is not out: let the others finish
        REQUIRE(!h.live.empty());
        h.Finish(h.live.begin()->first);
        continue;
      }
      for (AttemptId a : h.LiveOn(victim))
        if (rng() % 2) h.core.AttemptStarted(a);
      for (AttemptId a : h.LiveOn(victim)) h.live.erase(a);
      h.core.RemoveExecutor(victim, true, "crashed");
      ++losses;
      h.Drain();
    }
    INFO("round " << round << ", max_attempts " << j.max_attempts);
    REQUIRE(h.finished.count(id));
    CHECK(h.finished[id].state == JobState::kFailed);
    CHECK(losses <= static_cast<int>(j.max_attempts));
  }
}

TEST_CASE("trust: 20,000 required labels match in linear time") {
  CoreHarness h(NoHeartbeats());
  std::vector<std::pair<std::string, std::string>> labels;
  for (int i = 0; i < 20000; ++i) labels.emplace_back("k" + std::to_string(i), "v");
  std::vector<std::pair<std::string, std::string>> reversed(labels.rbegin(), labels.rend());
  for (int i = 0; i < 8; ++i) h.Exec(1, 0, testing::kTestKernels, reversed);
  JobDef j = CoreHarness::Fanout(16);
  j.templ.labels = labels;
  auto t0 = std::chrono::steady_clock::now();
  JobId id = h.Submit(j);  // validation and placement match each executor
  while (!h.live.empty()) h.Finish(h.live.begin()->first);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(h.finished.count(id));
  CHECK(h.finished[id].state == JobState::kSucceeded);
  // Quadratic matching: 4e8 comparisons per match, seconds; linear: ms.
  CHECK(s < 1.0);
  // One label off: infeasible, with the reason.
  JobDef k = CoreHarness::Fanout(1);
  k.templ.labels = labels;
  k.templ.labels.back().second = "other";
  CHECK_FALSE(h.core.SubmitJob(k).ok());
}

TEST_CASE("trust: job_retention = 0 and a default limit below its floor are config errors") {
  auto load = [](const std::string& text) {
    auto c = Config::Parse(text, "test.toml");
    REQUIRE(c.ok());
    CoreOptions o;
    return LoadCoreOptions(*c, "core", &o);
  };
  CHECK(load("[core]\njob_retention = 1\n").ok());
  Status zero = load("[core]\njob_retention = 0\n");
  CHECK_FALSE(zero.ok());
  CHECK(zero.message().find("job_retention must be at least 1") != std::string::npos);
  CHECK_FALSE(load("[core]\nattempt_timeout_ceiling_s = 10\n").ok());  // below the 30 s floor
  CHECK_FALSE(load("[core]\nattempt_timeout_ratio = -1\n").ok());
  CoreOptions o;
  auto c = Config::Parse("[core]\nattempt_timeout_ratio = 0\n", "test.toml");
  REQUIRE(LoadCoreOptions(*c, "core", &o).ok());
  CHECK(o.attempt_timeout_ratio == 0);
}

TEST_CASE("trust: an attempt whose executor never reports a start times out by its class, a started one by the run limit") {
  CoreOptions o = NoHeartbeats();
  o.attempt_start_floor_s = 0.5;  // 10 x 0.1 s = 1 s is then the start limit
  CoreHarness h(o);
  ExecutorId quiet = h.ExecAs("quiet", 2);
  JobId warm = h.Submit(CoreHarness::Fanout(10));  // teaches the class: 0.1 s
  while (!h.live.empty()) {
    h.clock.Advance(0.1);
    h.Finish(h.live.begin()->first, 0.1);
  }
  REQUIRE(h.finished.count(warm));
  JobDef j = CoreHarness::Fanout(2);
  j.max_attempts = 3;
  h.Submit(j);
  std::vector<AttemptId> held = h.LiveOn(quiet);
  REQUIRE(held.size() == 2);
  h.core.AttemptStarted(held[0]);  // reported started: judged by the run limit (30 s floor)
  h.Pass(0.9);
  CHECK(h.core.Counters().attempts_timed_out == 0);
  h.Pass(0.2);  // 1.1 s: the unstarted one is past 10 x its class's p99
  CHECK(h.core.Counters().attempts_timed_out == 1);
  CHECK_FALSE(h.live.count(held[1]));
  CHECK(h.live.count(held[0]));
  h.Pass(o.attempt_timeout_floor_s - 2);
  CHECK(h.live.count(held[0]));  // the started one keeps its run limit
  h.Pass(2);
  CHECK_FALSE(h.live.count(held[0]));
}

TEST_CASE("trust: attempts queued behind others on their executor get no start limit") {
  CoreOptions o = NoHeartbeats();
  o.attempt_start_floor_s = 0.5;
  o.pipeline_s = 10;  // 0.1 s tasks count as tiny: the executor queues them beyond its slot
  CoreHarness h(o);
  ExecutorId x = h.ExecAs("x", 1);
  h.Submit(CoreHarness::Fanout(20));
  for (int i = 0; i < 4; ++i) {  // pipelining starts after 4 commits of the job
    REQUIRE(h.LiveOn(x).size() == 1);
    h.clock.Advance(0.1);
    h.Finish(h.LiveOn(x)[0], 0.1);
  }
  std::vector<AttemptId> on_x = h.LiveOn(x);
  REQUIRE(on_x.size() >= 3);  // one on the slot, the rest queued behind it
  h.core.AttemptStarted(on_x[0]);
  h.Pass(2);  // the queued ones wait for the first: none is judged by a start limit
  CHECK(h.core.Counters().attempts_timed_out == 0);
}

TEST_CASE("trust: a stall of the driver is taken off every attempt's start and run limit") {
  CoreOptions o = NoHeartbeats();
  o.attempt_start_floor_s = 0.5;  // the unknown class's start limit is the 30 s floor; learned below: 1 s
  CoreHarness h(o);
  ExecutorId x = h.ExecAs("x", 2);
  JobId warm = h.Submit(CoreHarness::Fanout(10));  // teaches the class: 0.1 s
  while (!h.live.empty()) {
    h.clock.Advance(0.1);
    h.Finish(h.live.begin()->first, 0.1);
  }
  REQUIRE(h.finished.count(warm));
  h.Submit(CoreHarness::Fanout(2));
  std::vector<AttemptId> held = h.LiveOn(x);
  REQUIRE(held.size() == 2);
  h.core.AttemptStarted(held[0]);  // judged by the run limit (30 s floor)
  // The scheduler could not read for 5 s: the start report of held[1] may
  // wait unread, so its 1 s start limit does not count those 5 s.
  h.clock.Advance(5);
  h.core.DiscountStall(5);
  h.Pass(0.9);
  CHECK(h.core.Counters().attempts_timed_out == 0);
  h.Pass(0.2);  // 1.1 s of listening: now it is late
  CHECK(h.core.Counters().attempts_timed_out == 1);
  CHECK_FALSE(h.live.count(held[1]));
  h.Pass(o.attempt_timeout_floor_s - 2);  // the run limit moved by the stall too
  CHECK(h.live.count(held[0]));
  h.Pass(2);
  CHECK_FALSE(h.live.count(held[0]));
  h.core.DiscountStall(std::nan(""));  // nonsense from a driver changes nothing
  h.core.DiscountStall(-3);
}

TEST_CASE("trust: an executor that refuses everything at once rests, longer each time, and the work runs elsewhere") {
  CoreOptions o = NoHeartbeats();
  o.rest_after_refusals = 3;
  o.rest_s = 0.5;
  CoreHarness h(o);
  ExecutorId rogue = h.ExecAs("rogue", 8);  // registers first: the freest, so it is handed work first
  ExecutorId honest = h.ExecAs("honest", 1);
  JobId job = h.Submit(CoreHarness::Fanout(6));
  auto refuse_all = [&] {
    size_t n = 0;
    for (AttemptId a : h.LiveOn(rogue)) {
      h.live.erase(a);
      h.core.AttemptDropped(a, "executor dropped it: over its caps");
      ++n;
    }
    h.Drain();
    return n;
  };
  REQUIRE(refuse_all() >= 3);  // its third refusal in a row: it rests
  CHECK(h.core.Counters().executor_rests == 1);
  CHECK(h.LiveOn(rogue).empty());
  REQUIRE(h.LiveOn(honest).size() == 1);
  h.Pass(0.4);
  CHECK(h.LiveOn(rogue).empty());  // still resting
  h.Pass(0.2);                     // 0.6 s: the rest is over, it is handed work again
  REQUIRE_FALSE(h.LiveOn(rogue).empty());
  refuse_all();  // one more refusal, no result between: rests again, twice as long
  CHECK(h.core.Counters().executor_rests == 2);
  h.Pass(0.9);
  CHECK(h.LiveOn(rogue).empty());
  h.Pass(0.2);
  CHECK_FALSE(h.LiveOn(rogue).empty());
  // The honest executor runs every task meanwhile; a refused attempt costs
  // the task no attempt (max_attempts is not spent on refusals).
  while (!h.finished.count(job)) {
    refuse_all();
    REQUIRE_FALSE(h.LiveOn(honest).empty());
    h.clock.Advance(0.1);
    h.Finish(h.LiveOn(honest)[0], 0.1);
  }
  CHECK(h.finished.at(job).state == JobState::kSucceeded);
  // A result ends the run of refusals: one refusal after it is no rest.
  const uint64_t rests = h.core.Counters().executor_rests;
  h.Pass(60);  // past any rest
  JobId second = h.Submit(CoreHarness::Fanout(2));
  std::vector<AttemptId> on_rogue = h.LiveOn(rogue);
  REQUIRE_FALSE(on_rogue.empty());
  h.Finish(on_rogue[0], 0.1);
  refuse_all();
  CHECK(h.core.Counters().executor_rests == rests);
  (void)second;
}
