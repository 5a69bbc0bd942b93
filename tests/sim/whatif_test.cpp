// What-if straggler analysis (sim/include/tailcut/sim/whatif.h): a
// synthetic trace with a known slow executor / class, whose cost is known
// from the trace's construction.
#include <catch2/catch.hpp>

#include <cmath>

#include "tailcut/sim/whatif.h"

using namespace tailcut;
using namespace tailcut::sim;

namespace {

// `jobs` jobs of 8 tasks, one every `gap` s (no queueing between jobs), two
// tasks per executor 1..4, all started at once. Healthy attempts take
// 0.9 .. 1.1 s; attempts on executor `slow_exec` (or of class "b" when
// slow_class) take `factor` times as long.
std::vector<TraceRow> Synthetic(int jobs, ExecutorId slow_exec, double factor, bool slow_class = false,
                                double gap = 20) {
  std::vector<TraceRow> rows;
  for (int j = 0; j < jobs; ++j)
    for (uint32_t t = 0; t < 8; ++t) {
      TraceRow r;
      r.job = static_cast<JobId>(j + 1);
      r.task = t;
      r.executor = 1 + t / 2;
      r.task_class = t % 2 ? "b" : "a";
      r.start = 100 + j * gap;
      double d = 0.9 + 0.2 * ((j * 8 + t) % 5) / 4.0;  // 0.9, 0.95, ... 1.1
      if (r.executor == slow_exec || (slow_class && r.task_class == "b")) d *= factor;
      r.end = r.start + d;
      rows.push_back(r);
    }
  return rows;
}

}  // namespace

TEST_CASE("whatif names the slow executor and attributes the slowdown it caused", "[whatif]") {
  WhatifOptions o;
  o.policy = "";  // the attribution only
  auto rep = AnalyseTrace(Synthetic(30, 3, 4.0), "synthetic", o);
  REQUIRE(rep.ok());
  REQUIRE(rep->executors == 4);
  REQUIRE(rep->slots == 2);
  REQUIRE(rep->jobs == 30);
  // As recorded every job waits for executor 3's ~4 s attempts; idealised
  // every attempt takes the typical ~1 s.
  CHECK(rep->recorded.mean == Approx(rep->trace.mean).epsilon(0.05));
  CHECK(rep->slowdown > 3.0);
  REQUIRE(rep->by_executor.size() == 4);
  const WhatifPart& top = rep->by_executor[0];
  CHECK(top.name == "3");
  CHECK(top.attempts == 60);
  // Normalising executor 3 alone removes (nearly) the whole slowdown ...
  const double whole = rep->recorded.mean - rep->ideal.mean;
  CHECK(top.saved_mean == Approx(whole).epsilon(0.1));
  CHECK(top.share > 0.9);
  // ... and any other executor alone removes next to nothing.
  for (size_t i = 1; i < rep->by_executor.size(); ++i) CHECK(std::abs(rep->by_executor[i].saved_mean) < 0.1 * whole);
  // Classes a and b each ran half of executor 3's attempts: normalising
  // either leaves the other's slow attempts, so neither saves much alone.
  REQUIRE(rep->by_class.size() == 2);
  for (const WhatifPart& c : rep->by_class) CHECK(c.saved_mean < 0.5 * whole);
}

TEST_CASE("whatif splits by task class", "[whatif]") {
  WhatifOptions o;
  o.policy = "";
  auto rep = AnalyseTrace(Synthetic(30, 0, 3.0, /*slow_class=*/true), "synthetic", o);
  REQUIRE(rep.ok());
  REQUIRE(rep->by_class.size() == 2);
  CHECK(rep->by_class[0].name == "b");
  // Class b's typical time is its own median (about 3 s): it is slow work,
  // not stragglers, so normalising it saves little; the slowdown is the
  // noise within each class.
  CHECK(rep->by_class[0].typical_s == Approx(rep->by_class[0].recorded_s).epsilon(0.1));
  CHECK(rep->slowdown < 1.2);
  // No executor stands out: each ran both classes alike.
  for (const WhatifPart& e : rep->by_executor) CHECK(e.share < 0.6);
}

TEST_CASE("whatif shows what the default chain saves on a fail-slow executor", "[whatif]") {
  WhatifOptions o;  // policy default
  auto rep = AnalyseTrace(Synthetic(30, 2, 5.0), "synthetic", o);
  REQUIRE(rep.ok());
  CHECK(rep->policy == "default");
  CHECK(rep->fail_slow_windows >= 9);  // executor 2 is slow in every window
  // With the slowness bound to executor 2, none waits for it ...
  CHECK(rep->policy_none.mean > 4.0);
  // ... and the defaults avoid much of it: expected-finish placement keeps
  // work off it once flagged, copies race what it already holds.
  CHECK(rep->policy_chain.mean < rep->policy_none.mean - 1.0);
}

TEST_CASE("whatif typical time scales with input size", "[whatif]") {
  std::vector<TraceRow> rows;
  for (int i = 0; i < 9; ++i) {
    TraceRow r;
    r.job = 1;
    r.task = static_cast<TaskIndex>(i);
    r.executor = 1;
    r.task_class = "k";
    r.input_size = 1 + i;            // 1 .. 9
    r.start = 0;
    r.end = 2.0 * r.input_size * (i == 4 ? 10 : 1);  // 2 s per unit, one straggler
    rows.push_back(r);
  }
  bool scaled = false;
  std::vector<double> typical = TypicalTimes(rows, &scaled);
  CHECK(scaled);
  for (size_t i = 0; i < rows.size(); ++i) CHECK(typical[i] == Approx(2.0 * rows[i].input_size));
  rows[0].input_size = 0;  // one unknown size: the class falls back to its plain median
  typical = TypicalTimes(rows, &scaled);
  CHECK_FALSE(scaled);
  for (double t : typical) CHECK(t == typical[0]);
}

TEST_CASE("whatif rejects an empty or inconsistent trace", "[whatif]") {
  WhatifOptions o;
  auto empty = AnalyseTrace({}, "t.csv", o);
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.status().message().find("t.csv") != std::string::npos);
  std::vector<TraceRow> rows = Synthetic(1, 0, 1);
  rows[2].end = rows[2].start - 1;
  CHECK_FALSE(AnalyseTrace(rows, "t.csv", o).ok());
  CHECK_FALSE(AnalyseTrace(Synthetic(2, 0, 1), "t.csv", [] {
                WhatifOptions bad;
                bad.policy = "no-such-policy";
                return bad;
              }()).ok());
}

TEST_CASE("whatif keeps the first-ending attempt of a repeated task", "[whatif]") {
  std::vector<TraceRow> rows = Synthetic(5, 0, 1);
  TraceRow copy = rows[0];
  copy.executor = 2;
  copy.end = copy.start + 50;  // a copy that lost
  rows.push_back(copy);
  WhatifOptions o;
  o.policy = "";
  auto rep = AnalyseTrace(rows, "t", o);
  REQUIRE(rep.ok());
  CHECK(rep->duplicates == 1);
  CHECK(rep->tasks == 40);
  CHECK(rep->trace.p99 < 2);
}
