// One test per crash fuzzing found, asserting the fixed behaviour (the
// input itself is replayed from crashes/ by replay_test.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "tailcut/executor/kernel.h"

namespace tailcut::executor {

// crashes/scheduler_to_executor/sleep_ms_inf.pb: `sleep ms=inf` converted
// inf seconds to the steady clock's int64 nanoseconds (undefined).
TEST_CASE("a sleep of inf, huge or NaN seconds is well-defined and wakes on cancel") {
  const double inf = std::numeric_limits<double>::infinity();
  CancelToken cancelled;
  cancelled.Cancel();
  for (double s : {inf, 1e300, std::nan("")}) CHECK_FALSE(cancelled.SleepFor(s));
  CancelToken live;
  CHECK(live.SleepFor(std::nan("")));  // NaN sleeps like 0: not at all
  KernelRegistry kernels = BuiltinKernels();
  KernelContext ctx("ms=inf", &cancelled);
  auto out = kernels.Find("sleep")->fn(ctx);
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().message() == "cancelled");
}

}  // namespace tailcut::executor
