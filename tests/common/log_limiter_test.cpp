#include <catch2/catch.hpp>

#include <thread>

#include "tailcut/common/log_limiter.h"

using namespace tailcut;

TEST_CASE("log limiter: one line per interval, the next one counts those held back") {
  LogLimiter limit(std::chrono::milliseconds(200));
  uint64_t held = 99;
  REQUIRE(limit.Allow(&held));
  CHECK(held == 0);
  int written = 0;
  for (int i = 0; i < 1000; ++i) written += limit.Allow(&held);  // a burst: one loop turn after another
  CHECK(written == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  REQUIRE(limit.Allow(&held));
  CHECK(held == 1000);
}
