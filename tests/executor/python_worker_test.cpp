// The python kernel's workers run user code, so the executor trusts nothing
// they do (docs/PYTHON.md, "Limits"): a worker that closes its socket, sends
// garbage or keeps talking costs the executor a bounded wait and bounded
// memory, and its task fails saying what happened.
#include <catch2/catch.hpp>

#include "python_tasks.h"

using namespace tailcut;
using namespace tailcut::executor;
using namespace tailcut::executor::testing;

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

