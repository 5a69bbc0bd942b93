// Speed-proportional work (scheduler/core/src/work_shares.h): the share
// computation on its own, and divisible jobs through the core.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <numeric>

#include "core_harness.h"
#include "work_shares.h"

using namespace tailcut;
using tailcut::core::kMaxSpeedFactor;
using tailcut::core::SpeedShares;
using tailcut::testing::CoreHarness;

namespace {

uint64_t Sum(const std::vector<WorkShare>& s) {
  uint64_t n = 0;
  for (const WorkShare& w : s) n += w.count;
  return n;
}

// Shares cover [0, total) in task order without gaps or overlaps.
void CheckTiling(const std::vector<WorkShare>& s, uint64_t total) {
  uint64_t next = 0;
  for (const WorkShare& w : s) {
    CHECK(w.begin == next);
    CHECK(w.total == total);
    next += w.count;
  }
  CHECK(next == total);
}

}  // namespace

TEST_CASE("speed shares sum exactly to the total for awkward totals and factors") {
  const std::vector<std::vector<double>> factor_sets = {
      {1, 1, 1}, {1, 1, 5}, {0.3, 7, 2.5, 1.1, 1.9}, {1, 3}, {2, 2, 2, 2, 2, 2, 2}};
  for (const auto& f : factor_sets) {
    for (uint64_t total : {uint64_t{7}, uint64_t{10}, uint64_t{1000}, uint64_t{999'983}, core::kMaxDivisibleUnits}) {
      if (total < f.size()) continue;
      auto s = SpeedShares(total, f);
      REQUIRE(s.size() == f.size());
      CHECK(Sum(s) == total);
      CheckTiling(s, total);
      for (const WorkShare& w : s) CHECK(w.count >= 1);
    }
  }
}

TEST_CASE("speed shares are proportional to speed, within one unit") {
  const std::vector<double> f = {1, 1, 5, 2};
  const uint64_t total = 10'000;
  auto s = SpeedShares(total, f);
  double weights = 0;
  for (double x : f) weights += 1 / x;
  for (size_t i = 0; i < f.size(); ++i) {
    // One unit each first, the rest by weight: exact apportionment is within one unit of that.
    double ideal = 1 + (total - f.size()) * (1 / f[i]) / weights;
    CHECK(std::abs(static_cast<double>(s[i].count) - ideal) < 1.0);
  }
  CHECK(s[2].count < s[3].count);
  CHECK(s[3].count < s[0].count);
  CHECK(s[0].count == s[1].count);
}

TEST_CASE("equal speeds give equal shares, remainder to the lowest tasks") {
  auto s = SpeedShares(11, {1, 1, 1});
  CHECK(s[0].count == 4);
  CHECK(s[1].count == 4);
  CHECK(s[2].count == 3);
}

TEST_CASE("speed factors from peers are clamped and NaN counts as unknown") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // Unknown (NaN, inf, 0, negative) = a typical executor.
  auto unknown = SpeedShares(400, {1, nan, inf, -3});
  for (const WorkShare& w : unknown) CHECK(w.count == 100);
  auto zero = SpeedShares(400, {1, 0, 1, 1});
  CHECK(zero[1].count == 100);
  // Absurd factors are clamped: 1e9 slower counts as kMaxSpeedFactor slower,
  // 1e-9 faster as kMaxSpeedFactor faster.
  auto huge = SpeedShares(1'000'000, {1, 1e9});
  auto capped = SpeedShares(1'000'000, {1, kMaxSpeedFactor});
  CHECK(huge[1].count == capped[1].count);
  CHECK(huge[1].count > 1);
  auto tiny = SpeedShares(1'000'000, {1e-9, 1});
  auto capped_fast = SpeedShares(1'000'000, {1 / kMaxSpeedFactor, 1});
  CHECK(tiny[0].count == capped_fast[0].count);
  CHECK(Sum(huge) == 1'000'000);
}

TEST_CASE("one executor gets everything") {
  for (double f : {1.0, 5.0, std::numeric_limits<double>::quiet_NaN()}) {
    auto s = SpeedShares(12345, {f});
    REQUIRE(s.size() == 1);
    CHECK(s[0].begin == 0);
    CHECK(s[0].count == 12345);
  }
  CHECK(SpeedShares(5, {}).empty());
}

TEST_CASE("divisible jobs need rule all and at least one unit per task") {
  JobDef j = CoreHarness::Fanout(4, "train");
  j.divisible_units = 4;
  CHECK(core::ValidateDivisible(j).ok());
  j.divisible_units = 3;
  CHECK(core::ValidateDivisible(j).code() == Status::Code::kInvalidArgument);
  j.divisible_units = core::kMaxDivisibleUnits + 1;
  CHECK(core::ValidateDivisible(j).code() == Status::Code::kInvalidArgument);
  j.divisible_units = 100;
  j.rule.kind = CompletionKind::kKOfN;
  j.rule.k = 3;
  CHECK(core::ValidateDivisible(j).code() == Status::Code::kInvalidArgument);
  CoreHarness h;
  h.Exec(1);
  CHECK(h.core.SubmitJob(j).status().code() == Status::Code::kInvalidArgument);
}

namespace {

// Three one-slot executors; the third runs everything `slow` times longer,
// for `rounds` rounds of one task each, so the predictors learn its speed.
struct SlowFleet {
  explicit SlowFleet(double slow, int rounds = 10) {
    for (int i = 0; i < 3; ++i) e.push_back(h.Exec(1));
    for (int r = 0; r < rounds; ++r) {
      REQUIRE(h.core.SubmitJob(CoreHarness::Fanout(3, "train")).ok());
      // Until the round is done: expected-finish placement may hold a task
      // off the slow executor once it is flagged, for a fast one to take.
      for (h.Drain(); !h.live.empty(); h.Drain())
        for (auto [a, l] : std::map<AttemptId, LaunchCmd>(h.live)) h.Finish(a, l.executor == e[2] ? slow : 1.0);
    }
  }
  CoreHarness h;
  std::vector<ExecutorId> e;
};

}  // namespace

TEST_CASE("a divisible job's tasks are sized by the measured speed of their executors") {
  SlowFleet f(4.0);
  const PredictorSuite* p = f.h.core.Predictors();
  REQUIRE(p->SpeedFactor(f.e[2]) > 2.0);
  JobDef j = CoreHarness::Fanout(3, "train");
  j.templ.input_size = 300;  // an equal share's
  j.divisible_units = 900;
  auto id = f.h.core.SubmitJob(j);
  REQUIRE(id.ok());
  f.h.launches.clear();
  f.h.Drain();
  REQUIRE(f.h.launches.size() == 3);
  std::vector<double> factors(3);
  std::vector<WorkShare> got(3);
  for (const LaunchCmd& l : f.h.launches) {
    REQUIRE(l.share.divisible());
    factors[l.task] = p->SpeedFactor(l.executor);
    got[l.task] = l.share;
  }
  auto want = SpeedShares(900, factors);
  uint64_t slow_count = 0, fast_count = 0;
  for (const LaunchCmd& l : f.h.launches) {
    CHECK(l.share.begin == want[l.task].begin);
    CHECK(l.share.count == want[l.task].count);
    (l.executor == f.e[2] ? slow_count : fast_count) += l.share.count;
  }
  CheckTiling(got, 900);
  CHECK(slow_count * 2 * 2 < fast_count);  // a 4x slower executor: well under half a fast one's share

  SECTION("the predictors learn time per unit, not the share's run time") {
    // Every task runs in 1 s, whatever its share: the slow executor's small
    // share took as long per unit as the others' large ones. Measured per
    // unit, its speed factor drops towards the fast executors'.
    const double slow_before = p->SpeedFactor(f.e[2]), fast_before = p->SpeedFactor(f.e[0]);
    for (auto [a, l] : std::map<AttemptId, LaunchCmd>(f.h.live)) f.h.Finish(a, 1.0);
    CHECK(p->SpeedFactor(f.e[2]) / p->SpeedFactor(f.e[0]) < slow_before / fast_before);
    // Observers (traces, metrics) still see the real run time.
    for (const AttemptRecord& r : f.h.recorder.records)
      if (r.job == *id) CHECK(r.run_s == 1.0);
  }

  SECTION("a failed task runs the same share again, wherever it lands") {
    AttemptId slow_attempt = f.h.LiveOn(f.e[2]).at(0);
    TaskIndex t = f.h.live.at(slow_attempt).task;
    f.h.live.erase(slow_attempt);
    f.h.launches.clear();
    f.h.core.AttemptFailed(slow_attempt, "boom", 0.5);
    f.h.Drain();
    REQUIRE(f.h.launches.size() == 1);
    CHECK(f.h.launches[0].task == t);
    CHECK(f.h.launches[0].share.begin == got[t].begin);
    CHECK(f.h.launches[0].share.count == got[t].count);
  }

  SECTION("the shares are forgotten when the job ends") {
    for (auto [a, l] : std::map<AttemptId, LaunchCmd>(f.h.live)) f.h.Finish(a);
    CHECK(f.h.finished.at(*id).state == JobState::kSucceeded);
  }
}

TEST_CASE("tasks of a divisible job placed later get a typical executor's share") {
  CoreHarness h;
  h.Exec(1);  // one slot: task 0 now, tasks 1 and 2 later
  JobDef j = CoreHarness::Fanout(3, "train");
  j.divisible_units = 30;
  REQUIRE(h.core.SubmitJob(j).ok());
  h.Drain();
  REQUIRE(h.launches.size() == 1);
  CHECK(h.launches[0].share.count == 10);  // nothing measured yet: equal
  std::vector<WorkShare> seen{h.launches[0].share};
  for (int i = 0; i < 2; ++i) {
    h.Finish(h.launches.back().attempt);
    seen.push_back(h.launches.back().share);
  }
  CheckTiling(seen, 30);
}

TEST_CASE("a non-divisible job's launches carry no share") {
  CoreHarness h;
  h.Exec(2);
  REQUIRE(h.core.SubmitJob(CoreHarness::Fanout(2, "train")).ok());
  h.Drain();
  REQUIRE(h.launches.size() == 2);
  for (const LaunchCmd& l : h.launches) CHECK_FALSE(l.share.divisible());
}

TEST_CASE("a divisible job restored with commits but no shares fails, one without runs") {
  CoreHarness h;
  h.Exec(3);
  JobDef j = CoreHarness::Fanout(3, "train");
  j.divisible_units = 30;
  REQUIRE(h.core.RestoreJob(7, j, 0, {CommittedOutput{0, 1, 1, 1.0, ""}}).ok());
  h.Drain();
  REQUIRE(h.finished.count(7));
  CHECK(h.finished.at(7).state == JobState::kFailed);
  CHECK(h.finished.at(7).reason.find("without its speed shares") != std::string::npos);
  // Shares that do not fit the job (not one per task, or not summing to
  // the total) count as none.
  REQUIRE(h.core.RestoreJob(9, j, 0, {CommittedOutput{0, 1, 1, 1.0, ""}}, {10, 10}).ok());
  REQUIRE(h.core.RestoreJob(10, j, 0, {CommittedOutput{0, 1, 1, 1.0, ""}}, {10, 10, 11}).ok());
  h.Drain();
  CHECK(h.finished.at(9).state == JobState::kFailed);
  CHECK(h.finished.at(10).state == JobState::kFailed);
  REQUIRE(h.core.RestoreJob(8, j, 0, {}).ok());
  h.Drain();
  uint64_t units = 0;
  for (const LaunchCmd& l : h.launches)
    if (l.job == 8) units += l.share.count;
  CHECK(units == 30);
}

TEST_CASE("after a restart, attempts of a divisible job from before it are neither adopted nor committed") {
  CoreHarness h;
  const ExecutorId e = h.Exec(3);
  JobDef j = CoreHarness::Fanout(3, "train");
  j.divisible_units = 30;
  const AttemptId base = (AttemptId{2} << 40) + 1;  // run 2; run 1's attempts are below
  REQUIRE(h.core.RestoreJob(8, j, 0, {}).ok());
  h.core.ReserveIds(9, base);
  const AttemptId old_attempt = (AttemptId{1} << 40) + 5;
  Status adopted = h.core.AdoptAttempt(old_attempt, 8, 0, e, true);
  CHECK(adopted.code() == Status::Code::kFailedPrecondition);
  CHECK(adopted.message().find("from before the restart") != std::string::npos);
  CHECK_FALSE(h.core.CommitOrphanResult(8, 1, old_attempt + 1, e, "stale share", 1.0));
  // This run's own attempts still count: the job runs with its new shares.
  h.Drain();
  uint64_t units = 0;
  for (const LaunchCmd& l : h.launches) {
    CHECK(l.attempt >= base);
    units += l.share.count;
  }
  CHECK(units == 30);
  // A plain job's attempts from before the restart are adopted as before
  // (by an executor that offers the task's kernel).
  REQUIRE(h.core.RestoreJob(5, CoreHarness::Fanout(1, "noop"), 0, {}).ok());
  CHECK(h.core.AdoptAttempt(old_attempt + 2, 5, 0, h.Exec(1), true).ok());
}

TEST_CASE("a divisible job restored with its shares keeps its commits, runs the rest on them, adopts old attempts") {
  CoreHarness h;
  const ExecutorId e = h.Exec(3);
  JobDef j = CoreHarness::Fanout(3, "train");
  j.divisible_units = 30;
  const AttemptId run1 = (AttemptId{1} << 40) + 1;
  REQUIRE(h.core.RestoreJob(8, j, 0, {CommittedOutput{0, 1, 1, 1.0, "task 0"}}, {4, 6, 20}, run1).ok());
  const AttemptId base = (AttemptId{2} << 40) + 1;
  h.core.ReserveIds(9, base);
  // Journaled again as they came back: still vouching for run 1's attempts.
  std::vector<uint64_t> counts;
  AttemptId since = 0;
  REQUIRE(h.core.FixedShares(8, &counts, &since));
  CHECK(counts == std::vector<uint64_t>{4, 6, 20});
  CHECK(since == run1);
  // Task 1 still runs on its executor from before the restart: same shares, adopted.
  REQUIRE(h.core.AdoptAttempt((AttemptId{1} << 40) + 2, 8, 1, e, true).ok());
  h.Drain();
  REQUIRE(h.launches.size() == 1);  // only task 2 is launched again
  CHECK(h.launches[0].task == 2);
  CHECK(h.launches[0].share.begin == 10);
  CHECK(h.launches[0].share.count == 20);
  CHECK(h.launches[0].share.total == 30);
  // A job whose shares this run fixes: from this run's first attempt id.
  REQUIRE(h.core.SubmitJob(j).ok());
  h.Drain();
  const JobId fresh = h.launches.back().job;
  REQUIRE(h.core.FixedShares(fresh, &counts, &since));
  CHECK(since == base);
  CHECK_FALSE(h.core.FixedShares(12345, &counts, &since));
}

TEST_CASE("restored shares vouch only for attempts of the run that fixed them and later") {
  CoreHarness h;
  const ExecutorId e = h.Exec(3);
  JobDef j = CoreHarness::Fanout(3, "train");
  j.divisible_units = 30;
  // Run 1 fixed shares, crashed before journaling them; run 2 fixed these.
  REQUIRE(h.core.RestoreJob(8, j, 0, {}, {4, 6, 20}, (AttemptId{2} << 40) + 1).ok());
  h.core.ReserveIds(9, (AttemptId{3} << 40) + 1);
  CHECK(h.core.AdoptAttempt((AttemptId{1} << 40) + 2, 8, 0, e, true).code() == Status::Code::kFailedPrecondition);
  CHECK_FALSE(h.core.CommitOrphanResult(8, 1, (AttemptId{1} << 40) + 3, e, "run 1's share", 1.0));
  CHECK(h.core.AdoptAttempt((AttemptId{2} << 40) + 2, 8, 0, e, true).ok());
  CHECK(h.core.CommitOrphanResult(8, 1, (AttemptId{2} << 40) + 3, e, "run 2's share", 1.0));
}
