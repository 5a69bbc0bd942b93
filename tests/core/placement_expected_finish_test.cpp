// The expected_finish placement strategy: a task goes where it is expected
// to finish first, so a slow executor gets work only when it finishes that
// work before a faster one would; quarantine only for far too slow ones.
#include <catch2/catch.hpp>
#include <set>

#include "placement_expected_finish.h"
#include "state_fixture.h"

using namespace tailcut;
using tailcut::testing::StateFixture;

namespace {

CoreOptions ExpectedFinish() {
  CoreOptions o;
  o.placement = "expected_finish";
  return o;
}

// Teaches the predictors `n` committed runs of `job`'s task class on `e`,
// each `run_s` long.
void Teach(StateFixture& f, const core::Job& job, ExecutorId e, double run_s, int n) {
  for (int i = 0; i < n; ++i) {
    AttemptRecord r;
    r.job = job.id;
    r.executor = e;
    r.task_class = job.def.Task(0).ClassName();
    r.started = f.clock.Now();
    r.finished = r.started + run_s;
    r.run_s = run_s;
    r.outcome = AttemptOutcome::kCommitted;
    f.s.predictors->Observe(r);
  }
}

// Three single-slot executors of typical speed and one `slowdown` times
// slower, with the predictors taught so; returns the slow one.
ExecutorId SlowFleet(StateFixture& f, const core::Job& job, double slowdown) {
  ExecutorId fast[3] = {f.Exec(1), f.Exec(1), f.Exec(1)};
  ExecutorId slow = f.Exec(1);
  for (int round = 0; round < 20; ++round)
    for (ExecutorId e : fast) Teach(f, job, e, 0.02, 2);
  Teach(f, job, slow, 0.02 * slowdown, 60);
  for (ExecutorId e : {fast[0], fast[1], fast[2], slow}) f.place.MarkFree(f.s.executors.at(e));  // speeds moved
  REQUIRE(f.s.predictors->SpeedFactor(slow) > slowdown * 0.6);
  return slow;
}

// Places the first `n` tasks of `job` as the core's pump would; each must
// find an executor other than `slow`.
void PlaceFirst(StateFixture& f, core::Job& job, TaskIndex n, ExecutorId slow) {
  for (TaskIndex t = 0; t < n; ++t) {
    ExecutorId e = f.place.PickFree(job, t, false);
    REQUIRE(e != 0);
    CHECK(e != slow);
    f.Launch(job, t, e);
    job.next_unlaunched = t + 1;
  }
}

}  // namespace

TEST_CASE("expected_finish is the default placement and first_free stays selectable") {
  CHECK(CoreOptions{}.placement == "expected_finish");
  StateFixture f;
  CHECK(f.place.strategy().name() == "expected_finish");
  CoreOptions o;
  o.placement = "first_free";
  StateFixture g(o);
  CHECK(g.place.strategy().name() == "first_free");
}

TEST_CASE("speed buckets are a quarter octave and clamp nonsense") {
  using S = core::ExpectedFinishPlacement;
  CHECK(S::BucketOf(1.0) == 8);
  CHECK(S::BucketOf(2.0) == 12);
  CHECK(S::BucketOf(0.5) == 4);
  CHECK(S::BucketOf(1e9) == S::kBuckets - 1);
  CHECK(S::BucketOf(0) == 8);
  CHECK(S::BucketOf(std::nan("")) == 8);
  CHECK(S::BucketSpeed(S::BucketOf(5.0)) == Approx(5.0).epsilon(0.1));
}

TEST_CASE("the fastest free executor takes a task even if a slow one has been free longer") {
  StateFixture f(ExpectedFinish());
  core::Job& job = f.Job(16);
  ExecutorId slow = SlowFleet(f, job, 5);
  ExecutorId e = f.place.PickFree(job, 0, false);
  CHECK(e != 0);
  CHECK(e != slow);
}

TEST_CASE("a slow executor gets a task of a long job, which it finishes before the fast ones would") {
  StateFixture f(ExpectedFinish());
  core::Job& job = f.Job(16);
  ExecutorId slow = SlowFleet(f, job, 5);
  PlaceFirst(f, job, 3, slow);
  // 13 tasks left: the three fast executors need 1 + 5 rounds (~120 ms);
  // the slow one runs one in ~100 ms.
  CHECK(f.place.PickFree(job, 3, false) == slow);
}

TEST_CASE("a slow executor gets no task that a busy fast one would finish first") {
  StateFixture f(ExpectedFinish());
  core::Job& job = f.Job(4);
  ExecutorId slow = SlowFleet(f, job, 5);
  PlaceFirst(f, job, 3, slow);
  // The last task: a fast executor frees in ~20 ms and runs it by ~40 ms,
  // the slow one would need ~100 ms. It waits.
  CHECK(f.place.PickFree(job, 3, false) == 0);
  // A copy is wanted now: it takes the free slow executor.
  CHECK(f.place.PickFree(job, 0, true) == slow);
  // A fast executor frees: the task goes there.
  f.life.EndAttempt(f.s.attempts.at(f.s.next_attempt_id - 1), AttemptOutcome::kCommitted, 0.02);
  ExecutorId e = f.place.PickFree(job, 3, false);
  CHECK(e != 0);
  CHECK(e != slow);
}

TEST_CASE("without a predicted run time a free executor is taken at once") {
  StateFixture f(ExpectedFinish());
  ExecutorId a = f.Exec(1), b = f.Exec(1);
  core::Job& job = f.Job(4);  // nothing learned: speeds 1, run time unknown
  CHECK(f.place.PickFree(job, 0, false) == a);
  f.Launch(job, 0, a);
  CHECK(f.place.PickFree(job, 1, false) == b);
}

TEST_CASE("quarantine applies only to executors far slower than any job's horizon") {
  CoreOptions o = ExpectedFinish();
  o.quarantine_speed_factor = 10;
  StateFixture f(o);
  core::Job& job = f.Job(4);
  ExecutorId slow = SlowFleet(f, job, 5);
  f.gate.Apply(Proposal::Quarantine(slow, "test"), "test");
  CHECK_FALSE(f.s.executors.at(slow).quarantined);  // 5x: still useful for what it finishes in time
  ExecutorId crawling = f.Exec(1);
  Teach(f, job, crawling, 0.02 * 40, 80);
  REQUIRE(f.s.predictors->SpeedFactor(crawling) >= 10);
  f.gate.Apply(Proposal::Quarantine(crawling, "test"), "test");
  CHECK(f.s.executors.at(crawling).quarantined);
  CHECK(f.place.PickFree(job, 0, true) != crawling);

  CoreOptions first = o;
  first.placement = "first_free";
  StateFixture g(first);
  core::Job& gjob = g.Job(4);
  ExecutorId gslow = SlowFleet(g, gjob, 5);
  g.gate.Apply(Proposal::Quarantine(gslow, "test"), "test");
  CHECK(g.s.executors.at(gslow).quarantined);  // first_free: quarantine as proposed
}

namespace {
// Advises against the executors in `avoid`; the test changes the set
// without an event on them, as `late` (its slow nodes, on its ticks) and
// `default` (the chain a class runs) do.
struct SetAvoidPolicy : MitigationPolicy {
  std::string_view name() const override { return "set-avoid"; }
  bool AvoidExecutor(const ClusterView&, ExecutorId e) const override { return avoid.count(e) > 0; }
  std::set<ExecutorId> avoid;
};
}  // namespace

// Matrix m47 under `default` choosing `late`: the fast executors were
// free and advised against, the fail-slow one not. The task was held for
// the faster pool, which nothing would ever free: no attempt ran, so no
// event came to pump again, and the job was never placed.
TEST_CASE("a task is not held for free faster executors a policy advises against") {
  auto policy = std::make_unique<SetAvoidPolicy>();
  SetAvoidPolicy& p = *policy;
  PolicyChain chain;
  chain.push_back(std::move(policy));
  StateFixture f(ExpectedFinish(), std::move(chain));
  core::Job& job = f.Job(4);
  ExecutorId slow = SlowFleet(f, job, 5);
  REQUIRE(f.s.predictors->Health(slow).state == NodeHealth::kFailSlow);
  REQUIRE(f.s.attempts.empty());
  for (auto& [id, e] : f.s.executors)
    if (id != slow) p.avoid.insert(id);
  for (auto& [id, e] : f.s.executors) f.place.RefreshAvoid(e);  // the core's sweep
  ExecutorId e = f.place.PickFree(job, 0, false);
  CHECK(e != 0);
  CHECK(e != slow);  // the fastest free one, advised against or not
  CHECK(p.avoid.count(e));
  CHECK_FALSE(f.place.strategy().HeldLastPick());
  CHECK(f.place.PickFree(job, 0, true) == slow);  // a copy still never goes where advised against
}

// chaos_test: the executors faster than a fail-slow one were free and
// could not take the task (a rogue peer offering another kernel), and ran
// nothing: the task was held for them, no event came, the job never ended.
TEST_CASE("a task is not held for faster executors that cannot run it and run nothing") {
  StateFixture f(ExpectedFinish());
  core::Job& job = f.Job(4);
  ExecutorId slow = SlowFleet(f, job, 5);
  REQUIRE(f.s.predictors->Health(slow).state == NodeHealth::kFailSlow);
  REQUIRE(f.s.attempts.empty());
  for (auto& [id, e] : f.s.executors)
    if (id != slow) e.desc.memory_mb = 16;  // the fast ones: too small for the job's tasks
  job.def.templ.memory_mb = 64;
  CHECK(f.place.PickFree(job, 0, false) == slow);
  CHECK_FALSE(f.place.strategy().HeldLastPick());
}
