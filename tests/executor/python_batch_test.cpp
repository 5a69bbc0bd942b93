// Batches (docs/PYTHON.md, "Batches"): the runtime hands a batch kernel the
// attempts queued behind each other, and what it did not finish goes back
// to the queue; the python kernel runs a batch on one worker, and a worker
// lost or a task cancelled mid-batch costs no other task, nor runs one twice.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include "runtime_collector.h"
#include "tailcut/executor/python.h"
#include "tailcut/executor/runtime.h"

using namespace tailcut;
using namespace tailcut::executor;
using namespace tailcut::executor::testing;
using namespace std::chrono_literals;

namespace {

// batch_tasks:<fn>(path, i) as the python client sends it
// (python/tailcut/_pickling.py): pickle.dumps(((path, i), {}), protocol=5) written out by hand.
std::string PythonTask(const std::string& fn, const std::string& path, uint8_t i) {
  auto u32 = [](uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
  auto u64 = [](uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); };
  const std::string stream = std::string("\x80\x05X", 3) + u32(static_cast<uint32_t>(path.size())) + path + "K" +
                             std::string(1, static_cast<char>(i)) + "\x86}\x86.";
  const std::string ref = "batch_tasks:" + fn;
  return std::string("TCPY\x01M", 6) + u32(static_cast<uint32_t>(ref.size())) + ref + u32(0) + u64(stream.size()) +
         stream;
}

// The "<i> <pid>" lines batch_tasks wrote: task -> the pids it ran on.
std::map<int, std::vector<std::string>> Runs(const std::string& path) {
  std::map<int, std::vector<std::string>> out;
  std::ifstream in(path);
  int i;
  std::string pid;
  while (in >> i >> pid) out[i].push_back(pid);
  return out;
}

bool HavePython() { return access("/usr/bin/python3", X_OK) == 0; }

// A one-slot runtime with the python kernel; `ok` false (and a warning) without python3.
struct PythonRuntime {
  PythonRuntime() {
    if (!ok) {
      WARN("no /usr/bin/python3: the python kernel is not run");
      return;
    }
    setenv("PYTHONPATH", TAILCUT_SOURCE_DIR "/tests/executor", 1);  // batch_tasks; the pool prepends tailcut's
    REQUIRE(RegisterPythonKernel(&kernels, PythonOptions{}, 1).ok());
    char dir[] = "/tmp/tailcut-batch-XXXXXX";
    REQUIRE(mkdtemp(dir));
    path = std::string(dir) + "/runs";
    rt = std::make_unique<AttemptRuntime>(RuntimeOptions{1, 1}, &kernels, nullptr, nullptr);
    ev = std::make_unique<Collector>(rt.get());
  }
  ~PythonRuntime() {
    if (!ok) return;
    ev.reset();
    rt.reset();  // its workers first
    unlink(path.c_str());
    rmdir(path.substr(0, path.rfind('/')).c_str());
  }
  AttemptSpec Spec(AttemptId id, const std::string& fn, uint8_t i) const {
    return AttemptSpec{id, "python", PythonTask(fn, path, i)};
  }
  const bool ok = HavePython();
  KernelRegistry kernels;
  std::string path;
  std::unique_ptr<AttemptRuntime> rt;
  std::unique_ptr<Collector> ev;
};

}  // namespace

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
