#include <catch2/catch.hpp>

#include "tailcut/common/clock.h"

using namespace tailcut;

TEST_CASE("held clock: one reading while held, nested holds keep the outer one, then the clock again") {
  FakeClock fake(10);
  HeldClock c(fake);
  CHECK(c.Now() == 10);
  fake.Advance(1);
  CHECK(c.Now() == 11);  // not held: the clock itself
  {
    HeldClock::Scope outer(c);
    CHECK(c.held());
    fake.Advance(1);
    CHECK(c.Now() == 11);  // the reading taken when the hold began
    {
      HeldClock::Scope inner(c);
      fake.Advance(1);
      CHECK(c.Now() == 11);
    }
    CHECK(c.held());  // the outer hold still stands
    CHECK(c.Now() == 11);
  }
  CHECK_FALSE(c.held());
  CHECK(c.Now() == 13);
  fake.Advance(1);
  HeldClock::Scope again(c);  // a new hold reads afresh: monotonic
  CHECK(c.Now() == 14);
}
