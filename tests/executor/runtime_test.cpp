#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "runtime_collector.h"
#include "tailcut/executor/runtime.h"

using namespace tailcut;
using namespace tailcut::executor;
using namespace tailcut::executor::testing;
using namespace std::chrono_literals;

namespace {

AttemptSpec Spec(AttemptId id, std::string kernel, std::string args = "") {
  return AttemptSpec{id, std::move(kernel), std::move(args)};
}

}  // namespace

TEST_CASE("runtime runs at most `slots` attempts and queues the rest FIFO") {
  KernelRegistry kernels = BuiltinKernels();
  AttemptRuntime rt(RuntimeOptions{2, 1}, &kernels, nullptr, nullptr);
  Collector c{&rt};
  rt.Submit({Spec(1, "sleep", "ms=60000"), Spec(2, "sleep", "ms=60000"), Spec(3, "sleep", "ms=60000"),
             Spec(4, "sleep", "ms=60000")});
  REQUIRE(c.WaitFor([&] { return c.started.size() == 2; }));
  CHECK(c.started.count(1));
  CHECK(c.started.count(2));
  CHECK(rt.counts().running == 2);
  CHECK(rt.counts().queued == 2);

  // Cancel a queued one: reported at once, never started.
  rt.Cancel(3);
  REQUIRE(c.WaitFor([&] { return c.results.count(3); }));
  CHECK(c.results[3].outcome() == wire::AttemptResult::CANCELLED);
  CHECK(rt.counts().queued == 1);

  // Cancel a running one: the kernel stops, and 4 takes its slot.
  rt.Cancel(1);
  REQUIRE(c.WaitFor([&] { return c.results.count(1) && c.started.count(4); }));
  CHECK(c.results[1].outcome() == wire::AttemptResult::CANCELLED);
  CHECK(c.results[1].run_s() < 30);
  CHECK(c.started.count(3) == 0);

  // Progress is visible for running attempts only.
  auto progress = rt.Progress();
  CHECK(progress.size() == 2);

  rt.Cancel(2);
  rt.Cancel(4);
  rt.Cancel(999);  // unknown: ignored
  REQUIRE(c.WaitFor([&] { return c.results.size() == 4; }));
  CHECK(c.duplicate_results == 0);
  for (auto& [id, n] : c.started) CHECK(n == 1);
  CHECK(rt.counts().running == 0);
  CHECK(rt.counts().queued == 0);
}

TEST_CASE("runtime batches events: one wake-up, one drain for many results") {
  KernelRegistry kernels = BuiltinKernels();
  std::atomic<int> wakeups{0};
  AttemptRuntime rt(RuntimeOptions{2, 2}, &kernels, nullptr, [&] { ++wakeups; });
  std::vector<AttemptSpec> batch;
  for (AttemptId id = 1; id <= 50; ++id) batch.push_back(Spec(id, id % 2 ? "sleep" : "matmul", id % 2 ? "ms=1" : "n=8"));
  rt.Submit(std::move(batch));
  // Nobody drains until everything is done, so everything lands in one batch.
  auto deadline = std::chrono::steady_clock::now() + kGuard;
  while (rt.counts().running + rt.counts().queued > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(2ms);
  RuntimeEvents ev;
  rt.DrainEvents(&ev);
  CHECK(ev.started.size() == 50);
  CHECK(ev.results.size() == 50);
  CHECK(wakeups.load() == 1);
  for (auto& r : ev.results) CHECK(r.outcome() == wire::AttemptResult::OK);
}

TEST_CASE("noop runs inline when nothing is queued, and stays cheap") {
  KernelRegistry kernels = BuiltinKernels();
  std::atomic<int> wakeups{0};
  AttemptRuntime rt(RuntimeOptions{1, 1}, &kernels, nullptr, [&] { ++wakeups; });
  std::vector<AttemptSpec> batch;
  for (AttemptId id = 1; id <= 1000; ++id) batch.push_back(Spec(id, "noop"));
  rt.Submit(std::move(batch));
  // Inline: all results exist as soon as Submit returns.
  RuntimeEvents ev;
  rt.DrainEvents(&ev);
  CHECK(ev.started.size() == 1000);
  CHECK(ev.results.size() == 1000);
  CHECK(wakeups.load() == 1);

  // Behind a queued attempt, a noop waits its turn (FIFO).
  Collector c{&rt};
  // Queued noops run in one batch on a slot; a cancelled one is skipped.
  rt.Submit({Spec(2001, "sleep", "ms=60000"), Spec(2002, "sleep", "ms=60000"), Spec(2003, "noop"),
             Spec(2004, "noop"), Spec(2005, "noop"), Spec(2006, "sleep", "ms=1"), Spec(2007, "noop")});
  REQUIRE(c.WaitFor([&] { return c.started.count(2001); }));
  CHECK(c.results.count(2003) == 0);
  rt.Cancel(2004);
  rt.Cancel(2001);
  REQUIRE(c.WaitFor([&] { return c.started.count(2002); }));
  rt.Cancel(2002);
  REQUIRE(c.WaitFor([&] { return c.results.size() == 7; }));
  for (AttemptId id : {2003, 2005, 2006, 2007}) {
    CHECK(c.results[id].outcome() == wire::AttemptResult::OK);
    CHECK(c.started[id] == 1);
  }
  CHECK(c.results[2004].outcome() == wire::AttemptResult::CANCELLED);
  CHECK(c.started.count(2004) == 0);
  CHECK(c.duplicate_results == 0);
  CHECK(rt.counts().queued == 0);
}

TEST_CASE("unknown kernels, failing kernels and duplicate ids") {
  KernelRegistry kernels = BuiltinKernels();
  REQUIRE(kernels.Register("throws", [](KernelContext&) -> StatusOr<std::string> { throw std::runtime_error("boom"); }).ok());
  AttemptRuntime rt(RuntimeOptions{1, 1}, &kernels, nullptr, nullptr);
  Collector c{&rt};
  rt.Submit({Spec(1, "nope"), Spec(2, "shell", "exit 4"), Spec(3, "throws"), Spec(4, "sleep", "ms=1"),
             Spec(4, "sleep", "ms=1")});
  REQUIRE(c.WaitFor([&] { return c.results.size() == 4; }));
  CHECK(c.results[1].outcome() == wire::AttemptResult::FAILED);
  CHECK(c.results[1].error() ==
        "unknown kernel 'nope' (this executor offers: coded_matmul, exec, gradient_worker, matmul, noop, shell, sleep, spin, throws)");
  CHECK(c.results[2].outcome() == wire::AttemptResult::FAILED);
  CHECK(c.results[2].error().rfind("exit code 4", 0) == 0);
  CHECK(c.results[3].outcome() == wire::AttemptResult::FAILED);
  CHECK(c.results[3].error() == "kernel threw: boom");
  CHECK(c.results[4].outcome() == wire::AttemptResult::OK);
  CHECK(c.duplicate_results == 0);
  CHECK(c.started.count(1) == 0);  // never started
}

TEST_CASE("DropAll cancels everything and reports nothing for it") {
  KernelRegistry kernels = BuiltinKernels();
  AttemptRuntime rt(RuntimeOptions{1, 1}, &kernels, nullptr, nullptr);
  Collector c{&rt};
  rt.Submit({Spec(1, "sleep", "ms=60000"), Spec(2, "sleep", "ms=60000")});
  REQUIRE(c.WaitFor([&] { return c.started.count(1); }));
  CHECK(rt.DropAll() == 2);
  REQUIRE(c.WaitFor([&] { return rt.counts().running == 0; }));
  rt.Submit({Spec(3, "noop")});
  REQUIRE(c.WaitFor([&] { return c.results.count(3); }));
  CHECK(c.results.size() == 1);
  CHECK(c.started.count(2) == 0);
}

TEST_CASE("fault injection stretches attempts") {
  KernelRegistry kernels = BuiltinKernels();
  REQUIRE(kernels
              .Register("blocking20ms",
                        [](KernelContext&) -> StatusOr<std::string> {
                          std::this_thread::sleep_for(20ms);
                          return std::string("done");
                        })
              .ok());
  FaultOptions o;
  o.slowdown = 3.0;
  FaultInjector slow(o);
  AttemptRuntime rt(RuntimeOptions{2, 1}, &kernels, &slow, nullptr);
  Collector c{&rt};
  rt.Submit({Spec(1, "sleep", "ms=20"), Spec(2, "blocking20ms")});
  REQUIRE(c.WaitFor([&] { return c.results.size() == 2; }));
  CHECK(c.results[1].run_s() >= 0.059);  // sleep kernel stretched itself
  CHECK(c.results[2].run_s() >= 0.059);  // runtime added (F-1) x run time
  CHECK(c.results[2].output() == "done");

  FaultOptions d;
  d.delay_prob = 1.0;
  d.delay_ms = 30;
  FaultInjector delay(d);
  AttemptRuntime rt2(RuntimeOptions{1, 1}, &kernels, &delay, nullptr);
  Collector c2{&rt2};
  rt2.Submit({Spec(1, "noop")});
  REQUIRE(c2.WaitFor([&] { return c2.results.size() == 1; }));
  CHECK(c2.results[1].run_s() >= 0.029);
}

TEST_CASE("shutdown with running and queued attempts returns promptly") {
  KernelRegistry kernels = BuiltinKernels();
  AttemptRuntime rt(RuntimeOptions{2, 2}, &kernels, nullptr, nullptr);
  rt.Submit({Spec(1, "sleep", "ms=60000"), Spec(2, "spin", "ms=60000"), Spec(3, "shell", "sleep 60")});
  Collector c{&rt};
  REQUIRE(c.WaitFor([&] { return c.started.size() == 2; }));
  auto t0 = std::chrono::steady_clock::now();
  rt.Shutdown();
  CHECK(std::chrono::steady_clock::now() - t0 < 20s);
  rt.Shutdown();  // idempotent
}
