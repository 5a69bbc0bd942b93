// One test per crash fuzzing found, asserting the fixed behaviour (the
// input itself is replayed from crashes/ by replay_test.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "tailcut/common/clock.h"
#include "tailcut/executor/kernel.h"
#include "tailcut/core/scheduler_core.h"

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
  REQUIRE_FALSE(out.ok());  // refused by the kernel's argument check, or cancelled: never undefined
  CHECK(out.status().message().find("ms") != std::string::npos);
}

}  // namespace tailcut::executor

namespace tailcut {

// crashes/executor_message/report_run_s_nan.pb: a Report whose results carry
// run_s = NaN made the job's typical run time NaN, cast to an integer by
// the placement's pipelining (undefined).
TEST_CASE("run times from executors that are not finite numbers >= 0 count as unmeasured") {
  FakeClock clock(100);
  SchedulerCore core(CoreOptions{}, &clock);
  ExecutorDesc e;
  e.slots = 8;
  e.kernels = {"noop"};
  core.AddExecutor(e);
  JobDef job;
  job.templ.kernel = "noop";
  job.template_count = 8;
  job.return_outputs = true;
  REQUIRE(core.SubmitJob(std::move(job)).ok());
  core.Tick();
  std::vector<Command> commands;
  core.TakeCommands(&commands);
  const double bad[] = {std::nan(""), std::numeric_limits<double>::infinity(), -1, 1e308 * 10};
  size_t n = 0;
  for (const Command& c : commands)
    if (auto* l = std::get_if<LaunchCmd>(&c)) {
      core.AttemptProgress(l->attempt, std::nanf(""));
      core.AttemptSucceeded(l->attempt, "", bad[n++ % 4]);
    }
  REQUIRE(n == 8);
  core.Tick();
  auto outs = core.JobOutputs(1);
  REQUIRE(outs.ok());
  REQUIRE(outs->size() == 8);
  for (const auto& o : *outs) CHECK(o.run_s == 0);
}

}  // namespace tailcut
