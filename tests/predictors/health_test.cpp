#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "tailcut/common/clock.h"
#include "executor_speed.h"
#include "health_detector.h"

using namespace tailcut;

namespace {

// Feeds `n` tasks of length `mean_s` x factor x lognormal(0, sigma) to one
// executor, advancing the fake clock by each run time. Returns the 1-based
// index of the first observation after which the state equals `want`, or 0.
int Feed(CusumHealthDetector& d, FakeClock& clk, std::mt19937_64& rng, ExecutorId e, int n, double factor,
         double sigma, NodeHealth want) {
  std::normal_distribution<double> z(0, sigma);
  int hit = 0;
  for (int i = 1; i <= n; ++i) {
    double ratio = factor * std::exp(z(rng));
    clk.Advance(ratio);
    d.Observe(e, ratio, clk.Now());
    if (!hit && d.State(e).state == want) hit = i;
  }
  return hit;
}

}  // namespace

TEST_CASE("NodeHealthName", "[predictors][health]") {
  CHECK(std::string(NodeHealthName(NodeHealth::kHealthy)) == "healthy");
  CHECK(std::string(NodeHealthName(NodeHealth::kSuspect)) == "suspect");
  CHECK(std::string(NodeHealthName(NodeHealth::kFailSlow)) == "fail_slow");
  CHECK(std::string(NodeHealthName(NodeHealth::kRecovered)) == "recovered");
}

TEST_CASE("Health: unknown executors are healthy", "[predictors][health]") {
  CusumHealthDetector d;
  CHECK(d.State(42).state == NodeHealth::kHealthy);
  CHECK(d.State(42).speed_factor == 1.0);
}

TEST_CASE("Health: 3x slowdown -> SUSPECT then FAIL_SLOW, then RECOVERED, then HEALTHY", "[predictors][health]") {
  HealthOptions o;
  CusumHealthDetector d(o);
  FakeClock clk;
  std::mt19937_64 rng(11);
  REQUIRE(Feed(d, clk, rng, 1, 500, 1.0, 0.3, NodeHealth::kFailSlow) == 0);
  CHECK(d.State(1).state == NodeHealth::kHealthy);
  CHECK(std::abs(d.Baseline(1)) < 0.1);

  const Time onset = clk.Now();
  int suspect_at = 0, fail_at = 0;
  std::normal_distribution<double> z(0, 0.3);
  for (int i = 1; i <= 30 && !fail_at; ++i) {
    double r = 3.0 * std::exp(z(rng));
    clk.Advance(r);
    d.Observe(1, r, clk.Now());
    if (!suspect_at && d.State(1).state == NodeHealth::kSuspect) suspect_at = i;
    if (d.State(1).state == NodeHealth::kFailSlow) fail_at = i;
  }
  // SUSPECT is skipped when the alarm already has confirm_min post-change samples.
  CHECK((suspect_at == 0 || suspect_at <= fail_at));
  REQUIRE(fail_at > 0);
  CHECK(fail_at <= 10);
  NodeHealthState st = d.State(1);
  CHECK(st.since > onset);
  CHECK(st.since == clk.Now());
  CHECK(st.speed_factor == Approx(3.0).epsilon(0.35));

  // Stays FAIL_SLOW while slow.
  CHECK(Feed(d, clk, rng, 1, 200, 3.0, 0.3, NodeHealth::kRecovered) == 0);
  // Back to normal: RECOVERED within a few tasks, HEALTHY after the hold time.
  int rec = Feed(d, clk, rng, 1, 10, 1.0, 0.3, NodeHealth::kRecovered);
  CHECK(rec > 0);
  CHECK(rec <= static_cast<int>(o.recover_window) + 2);
  const Time rec_since = d.State(1).since;
  int healthy = Feed(d, clk, rng, 1, 200, 1.0, 0.3, NodeHealth::kHealthy);
  REQUIRE(healthy > 0);
  CHECK(d.State(1).since - rec_since >= o.recovered_hold_s);
}

TEST_CASE("Health: a 1.3x slowdown is at most SUSPECT (below fail_slow_factor)", "[predictors][health]") {
  CusumHealthDetector d;
  FakeClock clk;
  std::mt19937_64 rng(12);
  Feed(d, clk, rng, 1, 300, 1.0, 0.2, NodeHealth::kFailSlow);
  CHECK(Feed(d, clk, rng, 1, 300, 1.3, 0.2, NodeHealth::kFailSlow) == 0);
}

TEST_CASE("Health: isolated stragglers and bursts of four do not raise FAIL_SLOW", "[predictors][health]") {
  // 8x stragglers: in pairs every 50 tasks (noise 0.3); four back to back
  // every 100 (noise 0.1, so the evidence is the burst's alone: more than
  // confirm_stragglers maximally slow tasks are needed to confirm).
  for (int burst : {2, 4}) {
    CusumHealthDetector d;
    FakeClock clk;
    std::mt19937_64 rng(13);
    std::normal_distribution<double> z(0, burst == 2 ? 0.3 : 0.1);
    const int period = burst == 2 ? 50 : 100;
    for (int i = 0; i < 20000; ++i) {
      double r = std::exp(z(rng)) * (i % period < burst ? 8.0 : 1.0);
      clk.Advance(r);
      d.Observe(1, r, clk.Now());
      REQUIRE(d.State(1).state != NodeHealth::kFailSlow);
    }
  }
}

TEST_CASE("Health: an executor slow from the start is flagged", "[predictors][health]") {
  CusumHealthDetector d;
  FakeClock clk;
  std::mt19937_64 rng(14);
  int at = Feed(d, clk, rng, 7, 20, 2.5, 0.3, NodeHealth::kFailSlow);
  CHECK(at > 0);
  CHECK(at <= 10);
}

namespace {

// One executor's slowdown ratio: its own level x lognormal(sigma) noise, and
// a random 3-8x straggler with probability 4%.
double Sample(std::mt19937_64& rng, double level, double sigma) {
  std::normal_distribution<double> z(0, sigma);
  std::uniform_real_distribution<double> u(0, 1);
  double r = level * std::exp(z(rng));
  if (u(rng) < 0.04) r *= 3 + 5 * u(rng);
  return r;
}

}  // namespace

TEST_CASE("Health: a steadily 1.25x slower node with 4% stragglers is not flagged, its 2.5x change is",
          "[predictors][health]") {
  for (double sigma : {0.3, 0.5}) {  // the confirmation scales with the node's own noise
    CusumHealthDetector d;
    FakeClock clk;
    std::mt19937_64 rng(sigma == 0.3 ? 31 : 32);
    for (int i = 0; i < 50000; ++i) {
      const double r = Sample(rng, 1.25, sigma);
      clk.Advance(r);
      d.Observe(1, r, clk.Now());
      REQUIRE(d.State(1).state != NodeHealth::kFailSlow);
    }
    CHECK(d.Baseline(1) == Approx(std::log(1.25)).margin(0.1));  // its own level
    int at = 0;
    for (int i = 1; i <= 60 && !at; ++i) {
      const double r = Sample(rng, 2.5 * 1.25, sigma);
      clk.Advance(r);
      d.Observe(1, r, clk.Now());
      if (d.State(1).state == NodeHealth::kFailSlow) at = i;
    }
    CHECK(at > 0);
    if (sigma == 0.3) CHECK(at <= 10);  // noisier nodes need more tasks for the same confidence
  }
}

TEST_CASE("Health: Forget drops all state", "[predictors][health]") {
  CusumHealthDetector d;
  FakeClock clk;
  std::mt19937_64 rng(15);
  Feed(d, clk, rng, 3, 20, 4.0, 0.1, NodeHealth::kFailSlow);
  REQUIRE(d.State(3).state == NodeHealth::kFailSlow);
  d.Forget(3);
  CHECK(d.State(3).state == NodeHealth::kHealthy);
  CHECK(d.Cusum(3) == 0);
}

TEST_CASE("ExecutorSpeedTracker: geometric EWMA of ratios", "[predictors][speed]") {
  SpeedOptions o;
  ExecutorSpeedTracker t(o);
  t.Observe(1, 2.0);
  t.Observe(1, 2.0);
  CHECK(t.Speed(1) == 1.0);  // below min_samples
  t.Observe(1, 2.0);
  CHECK(t.Speed(1) == Approx(2.0));
  for (int i = 0; i < 100; ++i) t.Observe(1, 0.5);
  CHECK(t.Speed(1) == Approx(0.5).epsilon(0.01));
  t.Observe(1, 8.0);  // one straggler moves the geometric EWMA only by 8^alpha
  CHECK(t.Speed(1) == Approx(0.5 * std::pow(16.0, o.alpha)).epsilon(0.01));
  t.Observe(1, -1);  // ignored
  CHECK(t.Samples(1) == 104);
  t.Forget(1);
  CHECK(t.Speed(1) == 1.0);
}
