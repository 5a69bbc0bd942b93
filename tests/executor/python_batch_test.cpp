// Batches (docs/PYTHON.md, "Batches"): the runtime hands a batch kernel the
// attempts queued behind each other, and what it did not finish goes back
// to the queue; the python kernel runs a batch on one worker, and a worker
// lost or a task cancelled mid-batch costs no other task, nor runs one twice.
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <thread>

#include "python_tasks.h"

using namespace tailcut;
using namespace tailcut::executor;
using namespace tailcut::executor::testing;
using namespace std::chrono_literals;

TEST_CASE("a batch kernel gets the attempts queued behind each other, and those it leaves unfinished run again") {
  KernelRegistry kernels;
  std::vector<size_t> sizes;  // of every batch handed over
  std::map<std::string, int> runs;
  REQUIRE(kernels
              .Register(
                  "b", [](KernelContext&) -> StatusOr<std::string> { return std::string("single"); },
                  [&](KernelBatch& b) {
                    sizes.push_back(b.ctx.size());
                    // Runs the first two only; starts a third and drops it (a kernel's bug).
                    for (size_t i = 0; i < b.ctx.size() && i < 2; ++i) {
                      ++runs[std::string(b.ctx[i]->args())];
                      b.started(i);
                      b.finished(i, std::string(b.ctx[i]->args()));
                    }
                    if (b.ctx.size() > 2) b.started(2);
                  })
              .ok());
  REQUIRE(kernels
              .Register("s",
                        [](KernelContext& ctx) -> StatusOr<std::string> {
                          ctx.SleepFor(60);
                          return std::string();
                        })
              .ok());
  AttemptRuntime rt(RuntimeOptions{1, 1}, &kernels, nullptr, nullptr);
  Collector ev{&rt};
  // The slot is busy, so the five queue up and are handed over together.
  rt.Submit({AttemptSpec{1, "s", ""}});
  REQUIRE(ev.WaitFor([&] { return ev.started.count(1) == 1; }));
  std::vector<AttemptSpec> five;
  for (AttemptId id = 2; id <= 6; ++id) five.push_back(AttemptSpec{id, "b", "t" + std::to_string(id)});
  rt.Submit(std::move(five));
  rt.Cancel(1);
  REQUIRE(ev.WaitFor([&] { return ev.results.size() == 6; }));
  CHECK(ev.results[1].outcome() == wire::AttemptResult::CANCELLED);
  REQUIRE(!sizes.empty());
  CHECK(sizes.front() == 5);
  // 2 and 3 ran in the first batch; 4 was started and dropped: failed, never run again here.
  CHECK(ev.results[4].outcome() == wire::AttemptResult::FAILED);
  CHECK(ev.results[4].error() == "the batch kernel returned without its result");
  CHECK(runs.count("t4") == 0);
  // 5 and 6 never started: queued again and run by the next batch.
  for (AttemptId id : {2, 3, 5, 6}) {
    CHECK(ev.results[id].outcome() == wire::AttemptResult::OK);
    CHECK(runs["t" + std::to_string(id)] == 1);
  }
  CHECK(sizes.size() == 2);
  if (sizes.size() == 2) CHECK(sizes[1] == 2);
  for (AttemptId id = 1; id <= 6; ++id) CHECK(ev.started[id] == 1);
  CHECK(ev.duplicate_results == 0);
}

TEST_CASE(
    "a python worker that dies mid-batch fails the task it ran, and the ones after it run once, on a fresh worker") {
  PythonRuntime py;
  if (!py.ok) return;
  AttemptRuntime& rt = *py.rt;
  Collector& ev = *py.ev;
  // One Submit: all eight are queued when the slot looks, so they go as one batch.
  std::vector<AttemptSpec> eight;
  for (uint8_t i = 0; i < 8; ++i) eight.push_back(py.Spec(i + 1, i == 3 ? "crash" : "record", i));
  rt.Submit(std::move(eight));
  REQUIRE(ev.WaitFor([&] { return ev.results.size() == 8; }));
  for (AttemptId id = 1; id <= 8; ++id) {
    INFO("attempt " << id);
    CHECK(ev.results[id].outcome() == (id == 4 ? wire::AttemptResult::FAILED : wire::AttemptResult::OK));
    CHECK(ev.started[id] == 1);
  }
  CHECK(ev.results[4].error().find("exited with code 3 while running the task") != std::string::npos);
  auto runs = Runs(py.path);
  REQUIRE(runs.size() == 8);
  for (auto& [i, pids] : runs) {
    INFO("task " << i);
    CHECK(pids.size() == 1);  // each ran once, the crashed one too
  }
  // 0-3 on the first worker (one batch), 4-7 on its replacement.
  CHECK(runs[0][0] == runs[3][0]);
  CHECK(runs[4][0] == runs[7][0]);
  CHECK(runs[3][0] != runs[4][0]);
  CHECK(ev.duplicate_results == 0);
}

TEST_CASE("a cancel in a python batch stops only its task: queued ones are skipped, a running one interrupted") {
  PythonRuntime py;
  if (!py.ok) return;
  AttemptRuntime& rt = *py.rt;
  Collector& ev = *py.ev;
  // Warm: batch_tasks imported (a worker cancelled while a task imports is replaced).
  rt.Submit({py.Spec(9, "record", 9)});
  REQUIRE(ev.WaitFor([&] { return ev.results.count(9) == 1; }));
  rt.Submit({py.Spec(1, "sleep", 0), py.Spec(2, "record", 1), py.Spec(3, "record", 2), py.Spec(4, "record", 3)});
  REQUIRE(ev.WaitFor([&] { return ev.started.count(1) == 1; }));
  REQUIRE(ev.WaitFor([&] { return Runs(py.path).count(0) == 1; }));  // the function runs
  rt.Cancel(3);                                                      // queued behind it in the batch: never starts
  std::this_thread::sleep_for(50ms);  // the skip reaches the worker before the interrupt frees it
  rt.Cancel(1);                       // running: KeyboardInterrupt in that task alone
  REQUIRE(ev.WaitFor([&] { return ev.results.size() == 5; }));
  CHECK(ev.results[1].outcome() == wire::AttemptResult::CANCELLED);
  CHECK(ev.results[3].outcome() == wire::AttemptResult::CANCELLED);
  CHECK(ev.results[2].outcome() == wire::AttemptResult::OK);
  CHECK(ev.results[4].outcome() == wire::AttemptResult::OK);
  auto runs = Runs(py.path);
  CHECK(runs.count(2) == 0);
  REQUIRE((runs.count(0) && runs.count(1) && runs.count(3)));
  // The same worker went on: interrupted, not killed.
  CHECK(runs[9][0] == runs[0][0]);
  CHECK(runs[0][0] == runs[1][0]);
  CHECK(runs[1][0] == runs[3][0]);
  CHECK(ev.started.count(3) == 0);
  CHECK(ev.results[3].run_s() == 0);  // it never ran: no run time for the predictors
  CHECK(ev.duplicate_results == 0);
}
