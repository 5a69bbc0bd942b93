#include <catch2/catch.hpp>

#include "tailcut/executor/faults.h"

using namespace tailcut::executor;

TEST_CASE("slowdown and fail-slow factors multiply from their start time") {
  FaultInjector none(FaultOptions{});
  CHECK(none.TimeFactorAt(0) == 1.0);
  CHECK(none.TimeFactorAt(1e6) == 1.0);
  CHECK_FALSE(none.options().any());

  FaultOptions o;
  o.slowdown = 2.0;
  o.fail_slow_after_s = 10;
  o.fail_slow_factor = 3.0;
  FaultInjector f(o);
  CHECK(f.options().any());
  CHECK(f.TimeFactorAt(0) == 2.0);
  CHECK(f.TimeFactorAt(9.99) == 2.0);
  CHECK(f.TimeFactorAt(10) == 6.0);
  CHECK(f.TimeFactorAt(100) == 6.0);
}

TEST_CASE("delay probability is about p and deterministic for a seed") {
  FaultOptions o;
  o.delay_prob = 0.3;
  o.delay_ms = 25;
  o.seed = 7;
  FaultInjector a(o), b(o);
  int delayed = 0;
  for (int i = 0; i < 10000; ++i) {
    double da = a.DrawExtraDelayMs();
    REQUIRE(da == b.DrawExtraDelayMs());  // same seed, same sequence
    REQUIRE((da == 0 || da == 25));
    delayed += da > 0;
  }
  // Binomial(10000, 0.3): sd ~46; a fixed seed makes this exact anyway.
  CHECK(delayed > 2800);
  CHECK(delayed < 3200);

  o.delay_prob = 0;
  FaultInjector never(o);
  for (int i = 0; i < 100; ++i) CHECK(never.DrawExtraDelayMs() == 0);
}

TEST_CASE("crash is due only when configured and after its time") {
  FaultOptions o;
  CHECK_FALSE(FaultInjector(o).CrashDue(1e9));
  o.crash_after_s = 5;
  FaultInjector f(o);
  CHECK_FALSE(f.CrashDue(4.9));
  CHECK(f.CrashDue(5));
}
