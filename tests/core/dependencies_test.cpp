// Job dependencies and task inputs (dependencies.h) through the core, on a
// FakeClock: children wait for their parents, end with them, take their
// outputs, and the submit-time errors.
#include <catch2/catch.hpp>

#include "core_harness.h"
#include "dependencies.h"

using namespace tailcut;
using tailcut::testing::CoreHarness;

namespace {

JobDef After(JobDef j, std::vector<JobId> parents) {
  j.after = std::move(parents);
  return j;
}

// Finishes every live attempt of `job`, output "<job>:<task>".
void FinishAll(CoreHarness& h, JobId job) {
  std::vector<LaunchCmd> of;
  for (auto& [id, l] : h.live)
    if (l.job == job) of.push_back(l);
  for (const LaunchCmd& l : of) h.Finish(l.attempt, 1.0, std::to_string(job) + ":" + std::to_string(l.task));
}

size_t LaunchesOf(const CoreHarness& h, JobId job) {
  size_t n = 0;
  for (const LaunchCmd& l : h.launches) n += l.job == job;
  return n;
}

}  // namespace

TEST_CASE("a child waits for its parents and runs when every one succeeded") {
  CoreHarness h;
  h.Exec(8);
  JobId a = h.Submit(CoreHarness::Fanout(2));
  JobId b = h.Submit(CoreHarness::Fanout(2));
  JobId c = h.Submit(After(CoreHarness::Fanout(3), {a, b}));
  CHECK(LaunchesOf(h, c) == 0);
  auto st = h.core.JobStatus(c);
  REQUIRE(st.ok());
  CHECK(st->state == JobState::kRunning);
  CHECK(st->waiting_for == std::vector<JobId>{a, b});
  CHECK(st->after == std::vector<JobId>{a, b});
  FinishAll(h, a);
  CHECK(h.core.JobStatus(c)->waiting_for == std::vector<JobId>{b});
  CHECK(LaunchesOf(h, c) == 0);
  FinishAll(h, b);
  CHECK(h.core.JobStatus(c)->waiting_for.empty());
  CHECK(LaunchesOf(h, c) == 3);
  FinishAll(h, c);
  CHECK(h.finished.at(c).state == JobState::kSucceeded);
}

TEST_CASE("a failing parent fails its children transitively, naming the parent and its reason") {
  CoreOptions o;
  o.max_attempts = 1;
  CoreHarness h(o);
  h.Exec(4);
  JobId map = h.Submit(CoreHarness::Fanout(2));
  JobId reduce = h.Submit(After(CoreHarness::Fanout(1), {map}));
  JobId report = h.Submit(After(CoreHarness::Fanout(1), {reduce}));
  AttemptId first = h.live.begin()->first;
  h.core.AttemptFailed(first, "boom", 0.1);
  h.Drain();
  REQUIRE(h.finished.count(map));
  CHECK(h.finished.at(map).state == JobState::kFailed);
  REQUIRE(h.finished.count(reduce));
  CHECK(h.finished.at(reduce).state == JobState::kFailed);
  CHECK(h.finished.at(reduce).reason.find("parent job " + std::to_string(map)) != std::string::npos);
  CHECK(h.finished.at(reduce).reason.find("boom") != std::string::npos);
  REQUIRE(h.finished.count(report));
  CHECK(h.finished.at(report).reason.find("parent job " + std::to_string(reduce)) != std::string::npos);
  CHECK(h.finished.at(report).reason.find("boom") != std::string::npos);
  CHECK(LaunchesOf(h, reduce) == 0);
  CHECK(LaunchesOf(h, report) == 0);
}

TEST_CASE("a cancelled parent cancels its children") {
  CoreHarness h;
  h.Exec(2);
  JobId p = h.Submit(CoreHarness::Fanout(1));
  JobId c = h.Submit(After(CoreHarness::Fanout(1), {p}));
  REQUIRE(h.core.CancelJob(p).ok());
  h.Drain();
  REQUIRE(h.finished.count(c));
  CHECK(h.finished.at(c).state == JobState::kCancelled);
  CHECK(h.finished.at(c).reason.find("was cancelled") != std::string::npos);
}

TEST_CASE("submit refuses unknown, foreign, failed and too many parents") {
  CoreOptions o;
  o.max_attempts = 1;
  CoreHarness h(o);
  h.Exec(2);
  auto unknown = h.core.SubmitJob(After(CoreHarness::Fanout(1), {999}));
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message().find("no job 999") != std::string::npos);

  JobDef mine = CoreHarness::Fanout(1);
  mine.owner = "user:alice";
  JobId alice = h.Submit(mine);
  JobDef theirs = After(CoreHarness::Fanout(1), {alice});
  theirs.owner = "user:bob";
  auto foreign = h.core.SubmitJob(theirs);
  REQUIRE_FALSE(foreign.ok());
  CHECK(foreign.status().code() == Status::Code::kPermissionDenied);

  JobId failing = h.Submit(CoreHarness::Fanout(1));
  for (auto& [id, l] : std::map<AttemptId, LaunchCmd>(h.live))
    if (l.job == failing) h.core.AttemptFailed(id, "bad input", 0);
  h.Drain();
  REQUIRE(h.finished.at(failing).state == JobState::kFailed);
  auto late = h.core.SubmitJob(After(CoreHarness::Fanout(1), {failing}));
  REQUIRE_FALSE(late.ok());
  CHECK(late.status().message().find("bad input") != std::string::npos);

  std::vector<JobId> many;
  for (size_t i = 0; i <= core::kMaxParents; ++i) many.push_back(h.Submit(CoreHarness::Fanout(1)));
  auto too_many = h.core.SubmitJob(After(CoreHarness::Fanout(1), many));
  REQUIRE_FALSE(too_many.ok());
  CHECK(too_many.status().message().find("the limit is " + std::to_string(core::kMaxParents)) != std::string::npos);
}

TEST_CASE("a parent evicted by job_retention is remembered - a child naming it still runs") {
  CoreOptions o;
  o.job_retention = 1;
  CoreHarness h(o);
  h.Exec(2);
  JobId p = h.Submit(CoreHarness::Fanout(1));
  FinishAll(h, p);
  JobId other = h.Submit(CoreHarness::Fanout(1));
  FinishAll(h, other);  // evicts p
  CHECK_FALSE(h.core.JobStatus(p).ok());
  JobId c = h.Submit(After(CoreHarness::Fanout(1), {p}));
  CHECK(LaunchesOf(h, c) == 1);
  // Its outputs are gone, though: a reference to them is refused.
  JobDef ref = CoreHarness::Fanout(1);
  ref.templ.inputs.push_back({p, 0, false});
  auto refused = h.core.SubmitJob(ref);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("no longer held") != std::string::npos);
}

TEST_CASE("a task takes its upstream outputs, kept past job_retention while its child needs them") {
  CoreOptions o;
  o.job_retention = 0;  // finished jobs are evicted at once, unless pinned
  CoreHarness h(o);
  h.Exec(4);
  JobDef map = CoreHarness::Fanout(3);
  map.return_outputs = true;
  JobId m = h.Submit(map);
  JobDef reduce = CoreHarness::Fanout(1);
  reduce.templ.inputs.push_back({m, 0, true});
  JobId r = h.Submit(reduce);
  CHECK(h.core.JobStatus(r)->after == std::vector<JobId>{m});  // added from the input
  CHECK(LaunchesOf(h, r) == 0);
  FinishAll(h, m);
  CHECK(h.finished.at(m).state == JobState::kSucceeded);
  REQUIRE(LaunchesOf(h, r) == 1);
  std::vector<ResolvedInput> in;
  REQUIRE(h.core.TaskInputs(r, 0, &in).ok());
  REQUIRE(in.size() == 3);
  for (TaskIndex t = 0; t < 3; ++t) {
    CHECK(in[t].job == m);
    CHECK(in[t].task == t);
    CHECK(*in[t].output == std::to_string(m) + ":" + std::to_string(t));
  }
  FinishAll(h, r);
  CHECK(h.finished.at(r).state == JobState::kSucceeded);
  // The parent was held only for its child.
  CHECK_FALSE(h.core.JobStatus(m).ok());
}

TEST_CASE("an input needs a parent that keeps its outputs and has the task") {
  CoreHarness h;
  h.Exec(2);
  JobId p = h.Submit(CoreHarness::Fanout(2));
  JobDef c = CoreHarness::Fanout(1);
  c.templ.inputs.push_back({p, 0, false});
  auto s = h.core.SubmitJob(c);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("return_outputs") != std::string::npos);
  JobDef kept = CoreHarness::Fanout(2);
  kept.return_outputs = true;
  JobId k = h.Submit(kept);
  JobDef past = CoreHarness::Fanout(1);
  past.templ.inputs.push_back({k, 5, false});
  auto s2 = h.core.SubmitJob(past);
  REQUIRE_FALSE(s2.ok());
  CHECK(s2.status().message().find("the job has 2 tasks") != std::string::npos);
}

TEST_CASE("a waiting child's job timeout counts from when it may run") {
  CoreOptions o;
  o.job_timeout_s = 5;
  o.lost_after_s = 1000;  // no heartbeats in this test
  CoreHarness h(o);
  h.Exec(2);
  JobId p = h.Submit(CoreHarness::Fanout(1));
  JobId c = h.Submit(After(CoreHarness::Fanout(1), {p}));
  h.Pass(4);
  FinishAll(h, p);
  h.Pass(4);  // 8 s after submission, 4 s after it became runnable
  CHECK_FALSE(h.finished.count(c));
  h.Pass(2);
  REQUIRE(h.finished.count(c));
  CHECK(h.finished.at(c).reason.find("timeout") != std::string::npos);
}

TEST_CASE("restore links children again: a waiting child waits, a child of a failed parent fails") {
  CoreHarness h;
  h.Exec(2);
  JobDef parent = CoreHarness::Fanout(1);
  REQUIRE(h.core.RestoreJob(10, parent, 0, {}).ok());
  REQUIRE(h.core.RestoreJob(11, After(CoreHarness::Fanout(1), {10}), 0, {}).ok());
  JobStatusInfo failed;
  failed.state = JobState::kFailed;
  failed.reason = "disk full";
  REQUIRE(h.core.RestoreFinishedJob(12, CoreHarness::Fanout(1), failed, {}).ok());
  REQUIRE(h.core.RestoreJob(13, After(CoreHarness::Fanout(1), {12}), 0, {}).ok());
  h.Drain();
  CHECK(h.core.JobStatus(11)->waiting_for == std::vector<JobId>{10});
  CHECK(LaunchesOf(h, 11) == 0);
  REQUIRE(h.finished.count(13));
  CHECK(h.finished.at(13).reason.find("disk full") != std::string::npos);
  FinishAll(h, 10);
  CHECK(LaunchesOf(h, 11) == 1);
  CHECK(h.core.ParentsOfUnfinished() == std::vector<JobId>{10});
}

TEST_CASE("a restored child that names its parent only through an input still waits for it") {
  CoreHarness h;
  h.Exec(2);
  JobDef parent = CoreHarness::Fanout(2);
  parent.return_outputs = true;
  REQUIRE(h.core.RestoreJob(20, parent, 0, {}).ok());
  JobDef child = CoreHarness::Fanout(1);
  child.templ.inputs.push_back({20, 0, true});  // the journaled spec: no `after`
  REQUIRE(h.core.RestoreJob(21, child, 0, {}).ok());
  h.Drain();
  CHECK(h.core.JobStatus(21)->waiting_for == std::vector<JobId>{20});
  CHECK(LaunchesOf(h, 21) == 0);
  FinishAll(h, 20);
  REQUIRE(LaunchesOf(h, 21) == 1);
  std::vector<ResolvedInput> in;
  REQUIRE(h.core.TaskInputs(21, 0, &in).ok());
  CHECK(in.size() == 2);
}
