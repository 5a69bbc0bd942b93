// Waiting work costs nothing (docs/PLACEMENT.md, "Waiting work"): a job no
// executor can place now is parked, not looked at again by the pump until
// an executor that could take it changes; and the core's timers fall due at
// times it computes (NextWakeUp), not at the driver's ticks. The cost is
// read from CoreCounters::placement_visits (jobs the pump took from the
// runnable queue), never from wall time.
#include <catch2/catch.hpp>

#include "core_harness.h"

using namespace tailcut;
using tailcut::testing::CoreHarness;
using tailcut::testing::NoHeartbeats;

namespace {

// A one-task job of `kernel` from its own keyless user (an owner of its own).
JobDef OneTask(const std::string& kernel, uint32_t i, bool wait = true) {
  JobDef j = CoreHarness::Fanout(1, kernel);
  j.owner = "user:u" + std::to_string(i);
  j.wait_for_resources = wait;
  return j;
}

uint64_t Visits(const CoreHarness& h) { return h.core.Counters().placement_visits; }

}  // namespace

TEST_CASE("10,000 unplaceable one-task jobs are looked at once each, then a job that fits costs O(1)") {
  constexpr uint32_t kWaiting = 10000;
  CoreHarness h(NoHeartbeats());
  ExecutorId e = h.Exec(2, 0, {"noop"});
  for (uint32_t i = 0; i < kWaiting; ++i) h.Submit(OneTask("gpu_only", i));  // a kernel nobody offers yet
  CHECK(h.launches.empty());
  // Each was looked at when it arrived, then parked: not once per arrival
  // after it (that was O(n^2) over the submissions).
  CHECK(Visits(h) <= 2 * kWaiting);

  // Time and ticks alone do nothing for them.
  const uint64_t parked = Visits(h);
  for (int i = 0; i < 100; ++i) h.Pass(0.01);
  CHECK(Visits(h) == parked);

  // A job that fits is placed at once, looking at itself alone.
  JobId fits = h.Submit(OneTask("noop", kWaiting));
  REQUIRE(h.LiveOn(e).size() == 1);
  CHECK(h.live.begin()->second.job == fits);
  CHECK(Visits(h) - parked <= 2);
  // Its end frees a slot the waiting jobs cannot use: still not looked at.
  const uint64_t before_finish = Visits(h);
  h.Finish(h.LiveOn(e)[0]);
  CHECK(h.finished.at(fits).state == JobState::kSucceeded);
  CHECK(Visits(h) - before_finish <= 1);
  CHECK(h.core.WaitingTasks() == kWaiting);
}

TEST_CASE("parked jobs are woken by an executor that offers their kernel, and keep their order") {
  CoreHarness h(NoHeartbeats());
  h.Exec(1, 0, {"noop"});
  std::vector<JobId> jobs;
  for (uint32_t i = 0; i < 5; ++i) jobs.push_back(h.Submit(OneTask("k", i)));
  CHECK(h.launches.empty());
  ExecutorId k = h.Exec(2, 0, {"k"});
  h.Drain();
  REQUIRE(h.LiveOn(k).size() == 2);
  CHECK(h.launches[0].job == jobs[0]);
  CHECK(h.launches[1].job == jobs[1]);
  // Each end frees room for the next parked one.
  for (size_t n = 2; n < jobs.size(); ++n) {
    h.Finish(h.LiveOn(k)[0]);
    REQUIRE(h.launches.size() == n + 1);
    CHECK(h.launches[n].job == jobs[n]);
  }
}

TEST_CASE("a job needing more room than any executor has free waits parked until room frees") {
  CoreHarness h(NoHeartbeats());
  ExecutorId e = h.Exec(2);
  h.Submit(OneTask("sleep", 0));  // takes one of the two slots
  REQUIRE(h.LiveOn(e).size() == 1);
  JobDef wide = OneTask("sleep", 1);
  wide.templ.cpu_slots = 2;
  JobId w = h.Submit(wide);
  REQUIRE(h.launches.size() == 1);  // one slot free, it needs two: parked
  const uint64_t parked = Visits(h);
  h.Pass(1);
  CHECK(Visits(h) == parked);
  h.Finish(h.LiveOn(e)[0]);
  REQUIRE(h.launches.size() == 2);
  CHECK(h.launches[1].job == w);
}

TEST_CASE("a parked job is judged again when the executors that could run it leave") {
  CoreOptions o = NoHeartbeats();
  o.infeasible_grace_s = 5;
  CoreHarness h(o);
  ExecutorId g = h.Exec(1, 1);
  JobDef gpu = OneTask("noop", 0, /*wait=*/false);
  gpu.templ.gpus = 1;
  h.Submit(gpu);  // holds the only gpu
  REQUIRE(h.LiveOn(g).size() == 1);
  h.Exec(1);  // cpu only: a free slot the gpu job below cannot use
  JobId waits = h.Submit(gpu);
  REQUIRE(h.launches.size() == 1);  // feasible, but no room now: parked
  h.core.RemoveExecutor(g, false, "goodbye");
  h.Drain();
  // Now nothing could ever run it: it fails after the grace, a timer the
  // core asks to be woken for.
  REQUIRE_FALSE(h.finished.count(waits));
  const Time due = h.core.NextWakeUp();
  CHECK(due == h.clock.Now() + 5);
  h.Pass(5);
  REQUIRE(h.finished.count(waits));
  CHECK(h.finished.at(waits).state == JobState::kFailed);
  CHECK(h.finished.at(waits).reason.find("gpu") != std::string::npos);
}

TEST_CASE("a cancelled parked job is forgotten by the parking, and the others still wake") {
  CoreHarness h(NoHeartbeats());
  h.Exec(1, 0, {"noop"});
  JobId a = h.Submit(OneTask("k", 0));
  JobId b = h.Submit(OneTask("k", 1));
  REQUIRE(h.core.CancelJob(a).ok());
  h.Drain();
  ExecutorId k = h.Exec(1, 0, {"k"});
  h.Drain();
  REQUIRE(h.LiveOn(k).size() == 1);
  CHECK(h.launches[0].job == b);
}

TEST_CASE("an idle core asks to be woken for nothing, a quorum deadline it asks for") {
  CoreOptions o = NoHeartbeats();
  o.job_timeout_s = 0;  // no default time limit: the quorum's deadline is the only timer
  CoreHarness h(o);
  CHECK(h.core.NextWakeUp() < 0);
  h.Exec(1);
  JobDef q = CoreHarness::Fanout(3, "sleep");
  q.rule.kind = CompletionKind::kQuorum;
  q.rule.k = 3;
  q.rule.min_count = 1;
  q.rule.deadline_s = 2;
  JobId job = h.Submit(q);
  CHECK(h.core.NextWakeUp() == 2);
  h.Finish(h.LiveOn(1)[0]);
  h.Pass(2);  // the driver ticks when the core asked to be woken
  REQUIRE(h.finished.count(job));
  CHECK(h.finished.at(job).state == JobState::kSucceeded);
  CHECK(h.core.NextWakeUp() < 0);
}
