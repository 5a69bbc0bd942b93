// The python kernel's workers run user code, so the executor trusts nothing
// they do (docs/PYTHON.md, "Limits"): a worker that closes its socket, sends
// garbage or keeps talking costs the executor a bounded wait and bounded
// memory, and its task fails saying what happened.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <thread>

#include "python_tasks.h"

using namespace tailcut;
using namespace tailcut::executor;
using namespace tailcut::executor::testing;
using namespace std::chrono_literals;

namespace {

uint64_t RssBytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  in >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE(
    "a python worker that closes its socket and lives on, or sends an oversized frame, is killed within seconds, and "
    "its task fails saying why") {
  struct Case {
    std::string fn, says;
  };
  for (const Case& c : {Case{"close_socket", "closed its socket but did not exit within 2 s: killed"},
                        Case{"oversized_frame", "sent a frame of 4294967280 bytes"}}) {
    CAPTURE(c.fn);
    PythonRuntime py;
    if (!py.ok) return;
    const auto t0 = std::chrono::steady_clock::now();
    py.rt->Submit({py.Spec(1, c.fn, 0)});  // it would sleep 30 s
    REQUIRE(py.ev->WaitFor([&] { return py.ev->results.count(1) == 1; }));
    CHECK(SecondsSince(t0) < 15);
    CHECK(py.ev->results[1].outcome() == wire::AttemptResult::FAILED);
    CHECK_THAT(py.ev->results[1].error(), Catch::Contains(c.says));
    // The slot serves on, on a fresh worker.
    py.rt->Submit({py.Spec(2, "record", 1)});
    REQUIRE(py.ev->WaitFor([&] { return py.ev->results.count(2) == 1; }));
    CHECK(py.ev->results[2].outcome() == wire::AttemptResult::OK);
  }
}

TEST_CASE("a python batch's 1 MiB bound counts its tasks' inputs") {
  PythonKernel py;
  if (!py.ok) return;
  const Kernel* k = py.kernels.Find("python");
  REQUIRE(k);
  REQUIRE(k->batch);
  const std::vector<KernelInput> inputs{KernelInput{1, 0, std::string(600 << 10, 'x'), ""}};
  std::vector<std::string> args;
  for (uint8_t i = 0; i < 3; ++i) args.push_back(PythonTask("record", py.path, i));
  CancelToken cancel[3];
  std::vector<std::unique_ptr<KernelContext>> ctx;
  KernelBatch b;
  for (size_t i = 0; i < 3; ++i) {
    ctx.push_back(std::make_unique<KernelContext>(args[i], &cancel[i]));
    ctx.back()->SetInputs(&inputs);
    b.ctx.push_back(ctx.back().get());
  }
  std::vector<size_t> finished;
  b.started = [](size_t) {};
  b.finished = [&](size_t i, StatusOr<std::string> out) {
    CHECK(out.ok());
    finished.push_back(i);
  };
  k->batch(b);
  // 600 KiB of inputs each: the first alone fills the write; the others are left for the next batch.
  CHECK(finished == std::vector<size_t>{0});
}

TEST_CASE("a python batch larger than the worker reads at once leaves the executor free while its first task runs") {
  PythonRuntime py;
  if (!py.ok) return;
  AttemptRuntime& rt = *py.rt;
  Collector& ev = *py.ev;
  rt.Submit({py.Spec(9, "record", 9)});  // warm: batch_tasks imported
  REQUIRE(ev.WaitFor([&] { return ev.results.count(9) == 1; }));
  // ~1 MiB in one batch: more than the socket holds, while the first task sleeps 30 s.
  rt.Submit(
      {py.Spec(1, "sleep_pad", 0, 340000), py.Spec(2, "record_pad", 1, 340000), py.Spec(3, "record_pad", 2, 340000)});
  REQUIRE(ev.WaitFor([&] { return ev.started.count(1) == 1 && Runs(py.path).count(0) == 1; }));
  const auto t0 = std::chrono::steady_clock::now();
  rt.Cancel(1);
  REQUIRE(ev.WaitFor([&] { return ev.results.size() == 4; }));
  CHECK(SecondsSince(t0) < 10);
  CHECK(ev.results[1].outcome() == wire::AttemptResult::CANCELLED);
  CHECK(ev.results[2].outcome() == wire::AttemptResult::OK);
  CHECK(ev.results[3].outcome() == wire::AttemptResult::OK);
  CHECK(ev.duplicate_results == 0);
}

TEST_CASE("a python worker that keeps talking between tasks is replaced, and what it sent costs bounded memory") {
  PythonRuntime py;
  if (!py.ok) return;
  AttemptRuntime& rt = *py.rt;
  Collector& ev = *py.ev;
  const uint64_t rss0 = RssBytes();
  rt.Submit({py.Spec(1, "flood", 0)});  // 16 MiB of progress frames after its answer
  REQUIRE(ev.WaitFor([&] { return ev.results.count(1) == 1; }));
  std::this_thread::sleep_for(1500ms);
  const uint64_t grown = RssBytes() - std::min(rss0, RssBytes());
  CHECK(grown < (40u << 20));  // unbounded: 1.9 M frames queued, over 80 MB
  rt.Submit({py.Spec(2, "record", 1)});
  REQUIRE(ev.WaitFor([&] { return ev.results.count(2) == 1; }));
  CHECK(ev.results[2].outcome() == wire::AttemptResult::OK);
  auto runs = Runs(py.path);
  REQUIRE((runs.count(0) && runs.count(1)));
  CHECK(runs[0][0] != runs[1][0]);
}

TEST_CASE("a python worker that dies after taking a task, before starting it, fails it saying how it ended") {
  PythonRuntime py;
  if (!py.ok) return;
  AttemptRuntime& rt = *py.rt;
  Collector& ev = *py.ev;
  rt.Submit({py.Spec(1, "exit_on_next_read", 0)});
  REQUIRE(ev.WaitFor([&] { return ev.results.count(1) == 1; }));
  CHECK(ev.results[1].outcome() == wire::AttemptResult::OK);
  rt.Submit({py.Spec(2, "record", 1)});  // the idle worker reads it and exits
  REQUIRE(ev.WaitFor([&] { return ev.results.count(2) == 1; }));
  CHECK(ev.results[2].outcome() == wire::AttemptResult::FAILED);
  CHECK_THAT(ev.results[2].error(), Catch::Contains("exited with code 4") && Catch::Contains("before starting"));
  CHECK(Runs(py.path).count(1) == 0);
}

TEST_CASE("python workers start in an executor whose stdin and stdout are closed") {
  PythonKernel py;
  if (!py.ok) return;
  const Kernel* k = py.kernels.Find("python");
  REQUIRE(k);
  const std::string args = PythonTask("record", py.path, 1);
  CancelToken cancel;
  KernelContext ctx(args, &cancel);
  // A daemon started with 0 and 1 closed: the worker's socket pair lands on them.
  const int in = dup(0), out = dup(1);
  REQUIRE((in >= 0 && out >= 0));
  close(0);
  close(1);
  StatusOr<std::string> r = k->fn(ctx);
  dup2(in, 0);
  dup2(out, 1);
  close(in);
  close(out);
  INFO(r.status().message());
  CHECK(r.ok());
  CHECK(Runs(py.path).count(1) == 1);
}
