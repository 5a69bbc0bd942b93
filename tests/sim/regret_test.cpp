// The regret table (issue 39; tailcut/sim/regret.h): `default` against
// `none` and against the best fixed shipped policy of each shape.
#include "tailcut/sim/regret.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <set>

#include "tailcut/common/log.h"
#include "tailcut/policies/selector.h"
#include "tailcut/sim/matrix.h"
#include "tailcut/sim/replay.h"

namespace tailcut::sim {
namespace {

const std::vector<RegretShape>& Shapes() {
  static const std::vector<RegretShape> shapes = [] {
    auto s = RegretShapes(TAILCUT_SOURCE_DIR);
    if (!s.ok()) FAIL(s.status().message());
    return std::move(s).value();
  }();
  return shapes;
}

const RegretShape& Shape(const std::string& name) {
  for (const RegretShape& s : Shapes())
    if (s.name == name) return s;
  FAIL("no shape " << name);
  return Shapes().front();
}

TEST_CASE("regret: the shapes are the matrix and the shipped scenarios", "[sim][regret]") {
  size_t matrix = 0;
  std::set<std::string> names;
  for (const RegretShape& s : Shapes()) {
    matrix += s.matrix;
    names.insert(s.name);
  }
  CHECK(matrix == 64);
  CHECK(names.size() == Shapes().size());
  for (const char* n : {"random_stragglers", "heavy_tail", "fail_slow", "stragglers_2ms_1slot", "healthy_2s_2slot"})
    CHECK(names.count(n));
  CHECK_FALSE(names.count("datacenter"));
}

// The CI subset (the full table runs 9 policies on 97 shapes, about a
// minute on an idle core: scripts/regret-table.sh): the shapes the issue
// measured `default` worst on against `none` (m10, m26) and against the
// best fixed policy (m41, hedge's), heavy-tailed and bimodal shapes where
// `late` or `hedge` win (m00, m44, m47), a shape and a shipped scenario
// where the inner chain wins (m62, stragglers_2ms_1slot), two owners' shapes
// where the replay must see the other class's load (m03, m07). Each is held to
// the ratios `default` reached when this test was written (the simulator is
// deterministic; 0.5% slack for the last digit): a regression fails, an
// improvement is welcome (lower the figure). Raised with the paired replays
// (replay_seeds 2, margin 0.15; docs/POLICIES.md, "Replayed workloads and
// margin"), which gained on the whole matrix and the scenarios: m26's and
// m47's p50 (still below none's) and m41's p99 against the best, 1.39x to
// 2.92x (its last replay finds late's and hedge's p50 1.2x none's, and the
// p50 test sends it to none); lowered when clone races' losers were learned
// (m41 2.92x to 1.12x the best). Where they still miss the
// issue's targets (p50 <= 1.02x and p99 <= none's, p99 <= 1.1x the best),
// docs/benchmarks/matrix.md, "The regret table", says why.
TEST_CASE("regret: default against none and the best fixed policy on the CI subset", "[sim][regret]") {
  struct Bound {
    double p50_none, p99_none, p99_best;
  };
  const std::map<std::string, Bound> subset = {
      {"m00", {0.686, 0.238, 1.018}}, {"m03", {0.380, 0.251, 1.000}},
      {"m07", {0.070, 0.157, 0.845}}, {"m10", {1.328, 1.216, 1.312}},
      {"m26", {0.960, 0.712, 0.991}}, {"m41", {1.529, 0.192, 1.117}},
      {"m44", {1.001, 0.133, 1.119}}, {"m47", {0.568, 0.174, 1.217}},
      {"m62", {0.456, 0.345, 1.000}}, {"stragglers_2ms_1slot", {0.542, 0.393, 1.000}},
  };
  constexpr double kSlack = 1.005;
  for (const auto& [name, bound] : subset) {
    const RegretShape& s = Shape(name);
    auto row = RunRegretShape(s);
    REQUIRE(row.ok());
    INFO(name << ": " << s.summary << "; none p50 " << row->none.p50 << " p99 " << row->none.p99 << ", default p50 "
              << row->policy.p50 << " p99 " << row->policy.p99 << ", best " << row->best_name << " p99 "
              << row->best_p99);
    CHECK(row->policy.unfinished == 0);
    CHECK(row->policy.p50 <= kSlack * bound.p50_none * row->none.p50);
    CHECK(row->policy.p99 <= kSlack * bound.p99_none * row->none.p99);
    CHECK(row->policy.p99 <= kSlack * bound.p99_best * row->best_p99);
  }
}

// `default` against `none` on every matrix shape: the shapes where it does
// not yet hold p50 <= 1.02x and p99 <= none's (docs/benchmarks/matrix.md, "The
// regret table": bimodal classes, full load, quorum jobs) may not get
// worse than measured; every other shape must hold both.
// A sanitizer build checks every 4th shape: there it looks for memory
// errors, and the whole matrix took 17 minutes (the figures are the
// release build's, deterministic).
TEST_CASE("regret: default does no harm against none on the matrix", "[sim][regret]") {
#if defined(__SANITIZE_ADDRESS__)
  constexpr size_t kStride = 4;
#else
  constexpr size_t kStride = 1;
#endif
  const std::set<std::string> known = {"m06", "m10", "m12", "m22", "m28", "m41", "m43", "m48", "m56", "m58"};
  size_t p50 = 0, p99 = 0, at = 0;
  for (const MatrixShape& s : MatrixShapes()) {
    if (at++ % kStride) continue;
    auto row = RunMatrixShape(s, "default", false);
    INFO(s.name << ": " << s.summary);
    REQUIRE(row.ok());
    CHECK(row->policy.unfinished == 0);
    INFO("none p50 " << row->none.p50 << " p99 " << row->none.p99 << ", default p50 " << row->policy.p50 << " p99 "
                     << row->policy.p99);
    p50 += row->p50_holds;
    p99 += row->p99_holds;
    if (known.count(s.name)) continue;
    CHECK(row->p50_holds);
    CHECK(row->p99_holds);
  }
  if (kStride > 1) return;
  CHECK(p50 >= 59);  // of 64, as measured (scripts/regret-table.sh)
  CHECK(p99 >= 58);
}

// The selector's replay of a class beside the other classes on its fleet
// (tailcut/policies/replay.h, ReplayModel::others): their load slows the
// class's jobs, and only the class's own jobs are scored.
TEST_CASE("replay: a class is replayed beside the other classes' load", "[sim][regret]") {
  ReplayModel m;
  m.task_class = "main";
  m.executors = 4;
  m.executor_factors.assign(4, 1.0);
  m.job_rate = 5;  // x 4 tasks x 0.1 s on 4 slots: load 0.5
  m.tasks = m.needed = 4;
  for (int i = 0; i < 64; ++i) m.times.push_back(0.08 + 0.04 * (i % 8) / 7);
  m.jobs = 200;
  auto score = [](const ReplayModel& model) {
    SimReplayEngine engine{Config()};
    REQUIRE(engine.Start(model, {"none"}));
    std::vector<ReplayScore> s;
    REQUIRE(engine.Poll(&s));
    REQUIRE(s.size() == 1);
    REQUIRE(s[0].ran);
    return s[0];
  };
  const ReplayScore alone = score(m);
  ReplayLoad other;
  other.job_rate = 4;  // another 0.4 of the fleet
  other.tasks = other.needed = 4;
  other.times = m.times;
  m.others.push_back(other);
  auto sc = ReplayScenario(m, Config());
  REQUIRE(sc.ok());
  REQUIRE(sc->workload.classes.size() == 2);
  REQUIRE(sc->workload.streams.size() == 1);
  CHECK(sc->workload.streams[0].owner != sc->workload.owner);
  const ReplayScore beside = score(m);
  INFO("alone p50 " << alone.p50 << " p99 " << alone.p99 << ", beside p50 " << beside.p50 << " p99 " << beside.p99);
  CHECK(beside.p50 > 1.1 * alone.p50);
  CHECK(beside.p99 > alone.p99);
}

// Paired replays (replay_seeds): every candidate on the same workloads, the
// first drawn from the model's seed (one seed replays as before), scored by
// the means; out-of-range seeds are a config error.
TEST_CASE("replay: paired seeds, scored by their means", "[sim][regret]") {
  ReplayModel m;
  m.task_class = "main";
  m.executors = 4;
  m.executor_factors.assign(4, 1.0);
  m.job_rate = 8;
  m.tasks = m.needed = 4;
  for (int i = 0; i < 64; ++i) m.times.push_back(i % 16 == 0 ? 1.0 : 0.08 + 0.04 * (i % 8) / 7);
  m.jobs = 100;
  auto run = [](const ReplayModel& model) {
    SimReplayEngine engine{Config()};
    REQUIRE(engine.Start(model, {"none", "clone"}));
    std::vector<ReplayScore> s;
    REQUIRE(engine.Poll(&s));
    REQUIRE(s.size() == 2);
    return s;
  };
  const auto one = run(m);
  m.seeds = 3;
  const auto three = run(m);
  for (size_t c = 0; c < 2; ++c) {
    INFO(three[c].candidate);
    REQUIRE(three[c].ran);
    REQUIRE(three[c].p99s.size() == 3);
    REQUIRE(three[c].p50s.size() == 3);
    CHECK(three[c].p99s[0] == one[c].p99);  // the first workload is the one-seed replay's
    CHECK(three[c].p99 == Approx((three[c].p99s[0] + three[c].p99s[1] + three[c].p99s[2]) / 3));
    CHECK(three[c].p50 == Approx((three[c].p50s[0] + three[c].p50s[1] + three[c].p50s[2]) / 3));
  }
  // Other seeds draw other workloads.
  CHECK((three[0].p99s[1] != three[0].p99s[0] || three[0].p99s[2] != three[0].p99s[0]));
  SelectorOptions o;
  for (const char* bad : {"replay_seeds = 0", "replay_seeds = 17"}) {
    auto cfg = Config::Parse(std::string("[policies.selector]\n") + bad, "t");
    REQUIRE(cfg.ok());
    CHECK_FALSE(LoadSelectorOptions(*cfg, "policies.selector.", &o).ok());
  }
  auto cfg = Config::Parse("[policies.selector]\nreplay_seeds = 4", "t");
  REQUIRE(cfg.ok());
  REQUIRE(LoadSelectorOptions(*cfg, "policies.selector.", &o).ok());
  CHECK(o.replay_seeds == 4);
}

// scripts/regret-table.sh: the table of docs/benchmarks/matrix.md on stdout.
// TAILCUT_REGRET_POLICY: the entry judged (default); TAILCUT_REGRET_SHAPE:
// only the shapes whose name starts with it; TAILCUT_REGRET_SKIP_MATRIX: no
// matrix shape; TAILCUT_REGRET_SET: one config override (KEY=VALUE) for
// every shape, e.g. policies.selector.candidates=late,hedge@quantile=0.9,none;
// TAILCUT_REGRET_LOG=debug: on stderr, each replay's scores and the choice.
TEST_CASE("regret: the table", "[.regret-table]") {
  LogLevel level;
  if (const char* log = std::getenv("TAILCUT_REGRET_LOG"); log && ParseLogLevel(log, &level)) SetLogLevel(level);
  const char* entry = std::getenv("TAILCUT_REGRET_POLICY");
  const std::string policy = entry && *entry ? entry : "default";
  const char* only = std::getenv("TAILCUT_REGRET_SHAPE");
  const char* skip = std::getenv("TAILCUT_REGRET_SKIP_MATRIX");  // the scenarios only
  const char* set = std::getenv("TAILCUT_REGRET_SET");
  std::vector<RegretRow> rows;
  std::deque<RegretShape> changed;  // the rows point at their shapes
  for (const RegretShape& shape : Shapes()) {
    if (only && *only && shape.name.rfind(only, 0) != 0) continue;
    if (skip && *skip && shape.matrix) continue;
    const RegretShape* at = &shape;
    if (set && *set) {
      changed.push_back(shape);
      REQUIRE(changed.back().scenario.config.Override(set).ok());
      at = &changed.back();
    }
    const RegretShape& s = *at;
    auto row = RunRegretShape(s, policy);
    INFO(s.name);
    REQUIRE(row.ok());
    rows.push_back(std::move(row).value());
    std::fprintf(stderr, "%s done\n", s.name.c_str());
  }
  std::fputs(RegretTable(rows, policy).c_str(), stdout);
}

// Each shape under each entry of TAILCUT_REGRET_POLICIES (comma-separated
// --policy entries), one tab-separated line per run: shape, entry, p50,
// p99, p99.9, extra work ("refused" where the entry is refused). For
// comparing candidates without rerunning the fixed policies.
TEST_CASE("regret: raw runs", "[.regret-runs]") {
  const char* list = std::getenv("TAILCUT_REGRET_POLICIES");
  REQUIRE(list);
  const char* only = std::getenv("TAILCUT_REGRET_SHAPE");
  const char* skip = std::getenv("TAILCUT_REGRET_SKIP_MATRIX");
  std::vector<std::string> entries;
  for (std::string l = list; !l.empty();) {
    const size_t c = l.find(',');
    entries.push_back(l.substr(0, c));
    l = c == std::string::npos ? "" : l.substr(c + 1);
  }
  for (const RegretShape& s : Shapes()) {
    if (only && *only && s.name.rfind(only, 0) != 0) continue;
    if (skip && *skip && s.matrix) continue;
    for (const std::string& e : entries) {
      auto r = RunPolicy(s.scenario, e, s.scenario.seed);
      if (!r.ok()) {
        std::printf("%s\t%s\trefused\n", s.name.c_str(), e.c_str());
        continue;
      }
      std::printf("%s\t%s\t%.6g\t%.6g\t%.6g\t%.6g\t%llu\n", s.name.c_str(), e.c_str(), r->p50, r->p99, r->p999,
                  r->extra_work, static_cast<unsigned long long>(r->unfinished));
      std::fflush(stdout);
    }
  }
}

}  // namespace
}  // namespace tailcut::sim
