// An executor's GPUs and memory requests (issue 26): each attempt gets its
// own devices, in CUDA_VISIBLE_DEVICES, back in the free set when it ends
// however it ends; a program task over its memory request is stopped with a
// clear error. The devices are the runtime's (RuntimeOptions::gpus, what an
// executor's fake_gpus declares), so no GPU is needed.
#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "tailcut/common/config.h"
#include "tailcut/executor/executor.h"
#include "tailcut/executor/runtime.h"

using namespace tailcut;
using namespace tailcut::executor;
using namespace std::chrono_literals;

namespace {

// Outputs its CUDA_VISIBLE_DEVICES, after holding it until cancelled
// ("hold") or at once; "fail" fails instead.
StatusOr<std::string> DevicesKernel(KernelContext& ctx) {
  std::string devices = "(unset)";
  for (const std::string& e : TaskEnvironment(ctx))
    if (e.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0) devices = e.substr(21);
  ctx.ReportProgress(0.5f);
  if (ctx.args() == "hold") ctx.SleepFor(60);
  if (ctx.args() == "fail") return Status::Internal("failed holding " + devices);
  return devices;
}

KernelRegistry TestKernels() {
  KernelRegistry k = BuiltinKernels();
  if (!k.Register("devices", DevicesKernel).ok() || !k.Restrict({"devices", "shell", "sleep"}).ok())
    throw std::runtime_error("cannot register the test kernels");
  return k;
}

struct Run {
  explicit Run(uint32_t slots, uint32_t gpus) : rt(RuntimeOptions{slots, slots, gpus}, &kernels, nullptr, nullptr) {}
  KernelRegistry kernels = TestKernels();
  AttemptRuntime rt;
  std::map<AttemptId, wire::AttemptResult> results;
  std::set<AttemptId> started;

  bool WaitFor(const std::function<bool()>& done) {
    auto deadline = std::chrono::steady_clock::now() + 30s;
    for (;;) {
      RuntimeEvents ev;
      rt.DrainEvents(&ev);
      started.insert(ev.started.begin(), ev.started.end());
      for (auto& r : ev.results) results[r.attempt_id()] = r;
      if (done()) return true;
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(1ms);
    }
  }
  bool Finished(AttemptId a) {
    return WaitFor([&] { return results.count(a) > 0; });
  }
};

AttemptSpec Gpu(AttemptId id, uint32_t gpus, std::string args = "", std::string kernel = "devices") {
  AttemptSpec s{id, std::move(kernel), std::move(args), gpus};
  return s;
}

std::set<std::string> Split(const std::string& list) {
  std::set<std::string> out;
  for (size_t at = 0; at <= list.size();) {
    size_t comma = std::min(list.find(',', at), list.size());
    if (comma > at) out.insert(list.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("a 2-gpu attempt holds 2 distinct devices, in CUDA_VISIBLE_DEVICES") {
  Run r(4, 4);
  r.rt.Submit({Gpu(1, 2)});
  REQUIRE(r.Finished(1));
  REQUIRE(r.results[1].outcome() == wire::AttemptResult::OK);
  std::set<std::string> got = Split(r.results[1].output());
  CHECK(got.size() == 2);
  for (const std::string& d : got) CHECK((d >= "0" && d <= "3" && d.size() == 1));
}

TEST_CASE("concurrent gpu attempts never share a device, and the rest wait for one") {
  Run r(8, 3);
  // Three hold one device each; the fourth must wait though slots are free.
  r.rt.Submit({Gpu(1, 1, "hold"), Gpu(2, 1, "hold"), Gpu(3, 1, "hold"), Gpu(4, 1)});
  REQUIRE(r.WaitFor([&] { return r.started.size() == 3; }));
  std::this_thread::sleep_for(100ms);
  RuntimeEvents ev;
  r.rt.DrainEvents(&ev);
  CHECK(ev.started.empty());
  CHECK(r.rt.counts().running == 3);
  CHECK(r.rt.counts().queued == 1);
  // Progress tells which are running; their devices are told by their output once cancelled.
  r.rt.Cancel(2);
  REQUIRE(r.Finished(2));
  CHECK(r.results[2].outcome() == wire::AttemptResult::CANCELLED);
  REQUIRE(r.Finished(4));  // the cancelled attempt's device went back and 4 took it
  CHECK(r.results[4].outcome() == wire::AttemptResult::OK);
  CHECK(Split(r.results[4].output()).size() == 1);
  r.rt.Cancel(1);
  r.rt.Cancel(3);
  REQUIRE(r.WaitFor([&] { return r.results.size() == 4; }));
}

TEST_CASE("devices held by running attempts are all distinct") {
  Run r(8, 4);
  // Two 2-gpu attempts fail while holding theirs: the message names them.
  r.rt.Submit({Gpu(1, 2, "fail"), Gpu(2, 2, "fail")});
  REQUIRE(r.WaitFor([&] { return r.results.size() == 2; }));
  std::set<std::string> all;
  for (AttemptId a : {1, 2}) {
    REQUIRE(r.results[a].outcome() == wire::AttemptResult::FAILED);
    std::string held = r.results[a].error().substr(std::string("failed holding ").size());
    for (const std::string& d : Split(held)) all.insert(d);
  }
  // Whether they overlapped in time or not, the failed ones gave theirs back:
  // a 4-gpu attempt now gets all four.
  r.rt.Submit({Gpu(3, 4)});
  REQUIRE(r.Finished(3));
  CHECK(Split(r.results[3].output()) == std::set<std::string>{"0", "1", "2", "3"});
}

TEST_CASE("four 1-gpu attempts at once on four devices hold four different ones") {
  Run r(4, 4);
  r.rt.Submit({Gpu(1, 1, "hold"), Gpu(2, 1, "hold"), Gpu(3, 1, "hold"), Gpu(4, 1, "hold")});
  REQUIRE(r.WaitFor([&] { return r.started.size() == 4; }));
  for (AttemptId a : {1, 2, 3, 4}) r.rt.Cancel(a);
  REQUIRE(r.WaitFor([&] { return r.results.size() == 4; }));
  // Cancelled ones have no output; ask again with all four free: one 4-gpu attempt.
  r.rt.Submit({Gpu(5, 4)});
  REQUIRE(r.Finished(5));
  CHECK(Split(r.results[5].output()).size() == 4);
}

TEST_CASE("an attempt asking for more gpus than the executor has runs with none") {
  Run r(2, 1);
  r.rt.Submit({Gpu(1, 2)});
  REQUIRE(r.Finished(1));
  CHECK(r.results[1].output().empty());  // CUDA_VISIBLE_DEVICES="": it sees no device
}

TEST_CASE("a shell task over its memory request is stopped with a clear error") {
  Run r(2, 0);
  // Writes 300 MB into one string; the request is 64 MB.
  AttemptSpec big{1, "shell", "/usr/bin/python3 -c \"b = b'x' * (300 << 20); import time; time.sleep(20)\""};
  big.memory_mb = 64;
  AttemptSpec small{2, "shell", "/usr/bin/python3 -c \"b = b'x' * (8 << 20); print(len(b))\""};
  small.memory_mb = 256;
  auto t0 = std::chrono::steady_clock::now();
  r.rt.Submit({big, small});
  REQUIRE(r.WaitFor([&] { return r.results.size() == 2; }));
  CHECK(r.results[1].outcome() == wire::AttemptResult::FAILED);
  CHECK(r.results[1].error().find("exceeded its memory request of 64 MB") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - t0 < 15s);  // stopped, not left to sleep
  CHECK(r.results[2].outcome() == wire::AttemptResult::OK);
  CHECK(r.results[2].output() == "8388608\n");
}

TEST_CASE("an executor's memory_mb and fake_gpus come from its config, with the machine's memory by default") {
  auto parse = [](const std::string& text) {
    auto cfg = Config::Parse(text, "t");
    REQUIRE(cfg.ok());
    return ExecutorOptionsFromConfig(*cfg);
  };
  auto o = parse("memory_mb = 512\nfake_gpus = 2\n");
  REQUIRE(o.ok());
  CHECK(ResolveDefaults(*o).memory_mb == 512);
  CHECK(o->fake_gpus == 2);
  auto machine = parse("");
  REQUIRE(machine.ok());
  CHECK(ResolveDefaults(*machine).memory_mb == MachineMemoryMb());
  CHECK(MachineMemoryMb() > 0);  // /proc and sysconf answer on Linux
  auto negative = parse("memory_mb = -1\n");
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.status().message().find("memory_mb must be in [0, 2^40]") != std::string::npos);
  auto many = parse("fake_gpus = 65\n");
  REQUIRE_FALSE(many.ok());
  CHECK(many.status().message().find("fake_gpus must be at most 64") != std::string::npos);
}
