#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "tailcut/coding/task_args.h"
#include "tailcut/executor/kernel.h"

using namespace tailcut;
using namespace tailcut::executor;
using namespace std::chrono_literals;

namespace {

StatusOr<std::string> RunKernel(const char* name, std::string_view args, double time_factor = 1.0) {
  static const KernelRegistry registry = BuiltinKernels();
  const Kernel* k = registry.Find(name);
  REQUIRE(k != nullptr);
  CancelToken token;
  KernelContext ctx(args, &token, time_factor);
  return k->fn(ctx);
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("registry lists, finds and rejects duplicate kernels") {
  KernelRegistry r = BuiltinKernels();
  CHECK(r.Names() == std::vector<std::string>{"coded_matmul", "gradient_worker", "matmul", "noop", "shell", "sleep", "spin"});
  CHECK(r.NamesList() == "coded_matmul, gradient_worker, matmul, noop, shell, sleep, spin");
  CHECK(r.Find("sleep") != nullptr);
  CHECK(r.Find("nope") == nullptr);
  CHECK_FALSE(r.Register("noop", [](KernelContext&) -> StatusOr<std::string> { return std::string(); }).ok());
  CHECK_FALSE(r.Register("", [](KernelContext&) -> StatusOr<std::string> { return std::string(); }).ok());
  CHECK(r.Find("noop")->traits.instant);
}

TEST_CASE("a registry restricted to an allow-list keeps the others known but disabled") {
  KernelRegistry r = BuiltinKernels();
  CHECK(DefaultAllowedKernels() ==
        std::vector<std::string>{"coded_matmul", "gradient_worker", "matmul", "noop", "sleep", "spin"});
  REQUIRE(r.Restrict(DefaultAllowedKernels()).ok());
  CHECK(r.Find("shell") == nullptr);
  CHECK(r.NamesList() == "coded_matmul, gradient_worker, matmul, noop, sleep, spin");
  CHECK(r.MissingReason("shell") == "kernel 'shell' is not enabled on this executor (start it with --allow-shell)");
  CHECK(r.MissingReason("nope") ==
        "unknown kernel 'nope' (this executor offers: coded_matmul, gradient_worker, matmul, noop, sleep, spin)");

  REQUIRE(r.Restrict({"noop", "shell"}).ok());  // a new list: disabled kernels come back
  CHECK(r.Names() == std::vector<std::string>{"noop", "shell"});
  CHECK(r.MissingReason("sleep") == "kernel 'sleep' is not enabled on this executor (not in its allow_kernels)");

  Status bad = r.Restrict({"noop", "foo", "bar"});  // every unknown name, and nothing changes
  CHECK(bad.message() ==
        "unknown kernel(s) 'foo', 'bar' (known: coded_matmul, gradient_worker, matmul, noop, shell, sleep, spin)");
  CHECK(r.Names() == std::vector<std::string>{"noop", "shell"});
  REQUIRE(r.Restrict({}).ok());
  CHECK(r.Names().empty());
}

TEST_CASE("noop returns empty output") {
  auto out = RunKernel("noop", "");
  REQUIRE(out.ok());
  CHECK(out->empty());
}

TEST_CASE("sleep sleeps about ms, stretched by the time factor") {
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(RunKernel("sleep", "ms=20").ok());
  CHECK(Seconds(t0) >= 0.019);
  t0 = std::chrono::steady_clock::now();
  REQUIRE(RunKernel("sleep", "ms=10", 3.0).ok());
  CHECK(Seconds(t0) >= 0.029);
  CHECK_FALSE(RunKernel("sleep", "ms=abc").ok());
  CHECK_FALSE(RunKernel("sleep", "ms=-1").ok());
  CHECK_FALSE(RunKernel("sleep", "garbage").ok());
  REQUIRE(RunKernel("sleep", "ms=1 sigma=0.5 seed=3").ok());
}

// Issue #11: `sleep ms=inf` slept forever (or overflowed the timer).
TEST_CASE("sleep and spin reject nan, inf and absurd arguments, naming them") {
  for (const char* args : {"ms=inf", "ms=nan", "ms=1e999", "ms=-1", "ms=1e12"}) {
    for (const char* kernel : {"sleep", "spin"}) {
      auto r = RunKernel(kernel, args);
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().message().find("'ms'") != std::string::npos);
    }
  }
  auto sigma = RunKernel("sleep", "ms=1 sigma=1e6");
  REQUIRE_FALSE(sigma.ok());
  CHECK(sigma.status().message().find("'sigma'") != std::string::npos);
  auto seed = RunKernel("sleep", "ms=1 seed=99999999999999999999");
  REQUIRE_FALSE(seed.ok());
  CHECK(seed.status().message().find("'seed'") != std::string::npos);
}

TEST_CASE("sleep wakes early on cancellation and reports progress") {
  KernelRegistry r = BuiltinKernels();
  const Kernel* k = r.Find("sleep");
  REQUIRE(k);
  CancelToken token;
  KernelContext ctx("ms=60000", &token);
  std::thread canceller([&] {
    std::this_thread::sleep_for(50ms);
    token.Cancel();
  });
  auto t0 = std::chrono::steady_clock::now();
  auto out = k->fn(ctx);
  canceller.join();
  CHECK_FALSE(out.ok());
  CHECK(Seconds(t0) < 30.0);  // failure guard only: far below 60 s
}

TEST_CASE("spin burns about ms of CPU and stops when cancelled") {
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(RunKernel("spin", "ms=15").ok());
  CHECK(Seconds(t0) >= 0.014);

  KernelRegistry r = BuiltinKernels();
  CancelToken token;
  KernelContext ctx("ms=60000", &token);
  std::thread canceller([&] {
    std::this_thread::sleep_for(30ms);
    token.Cancel();
  });
  t0 = std::chrono::steady_clock::now();
  auto out = r.Find("spin")->fn(ctx);
  canceller.join();
  CHECK_FALSE(out.ok());
  CHECK(Seconds(t0) < 30.0);
  CHECK(ctx.progress() < 1.0f);
}

TEST_CASE("matmul checksum matches a naive multiply") {
  for (int n : {1, 7, 64, 100}) {
    auto a = MatmulInput(n, 42), b = MatmulInput(n, 43);
    double naive = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double c = 0;
        for (int k = 0; k < n; ++k) c += a[i * n + k] * b[k * n + j];
        naive += c;
      }
    double blocked = MatmulChecksum(a, b, n);
    CHECK(blocked == Approx(naive).epsilon(1e-9).margin(1e-9));

    auto out = RunKernel("matmul", "n=" + std::to_string(n) + " seed=42");
    REQUIRE(out.ok());
    REQUIRE(out->rfind("checksum=", 0) == 0);
    CHECK(std::stod(out->substr(9)) == Approx(naive).epsilon(1e-9).margin(1e-9));
  }
  // Deterministic: same seed, same output; different seed, different output.
  CHECK(RunKernel("matmul", "n=32 seed=5").value() == RunKernel("matmul", "n=32 seed=5").value());
  CHECK(RunKernel("matmul", "n=32 seed=5").value() != RunKernel("matmul", "n=32 seed=6").value());
  CHECK_FALSE(RunKernel("matmul", "n=0").ok());
  CHECK_FALSE(RunKernel("matmul", "n=100000").ok());
}

TEST_CASE("shell captures stdout and reports exit codes with stderr") {
  auto ok = RunKernel("shell", "echo hello; echo world");
  REQUIRE(ok.ok());
  CHECK(ok.value() == "hello\nworld\n");

  auto fail = RunKernel("shell", "echo partial; echo 'it broke' >&2; exit 3");
  REQUIRE_FALSE(fail.ok());
  CHECK(fail.status().message() == "exit code 3: it broke");

  auto big = RunKernel("shell", "head -c 3000000 /dev/zero");
  REQUIRE(big.ok());
  CHECK(big->size() == (1u << 20));  // capped at 1 MiB

  CHECK_FALSE(RunKernel("shell", "").ok());
}

TEST_CASE("shell kills the child on cancellation") {
  KernelRegistry r = BuiltinKernels();
  CancelToken token;
  KernelContext ctx("sleep 30; echo never", &token);
  std::thread canceller([&] {
    std::this_thread::sleep_for(100ms);
    token.Cancel();
  });
  auto t0 = std::chrono::steady_clock::now();
  auto out = r.Find("shell")->fn(ctx);
  canceller.join();
  CHECK_FALSE(out.ok());
  CHECK(Seconds(t0) < 20.0);
}

// Speed shares (docs/JOBS.md): gradient_worker reads the rows of the
// attempt's share from tcgs1 args; without a fitting share it fails.
TEST_CASE("gradient_worker computes the gradient of its work share only") {
  coded::LsqPartition p;
  p.x = coding::Matrix(4, 2);
  p.y = {1, 2, 3, 4};
  for (int i = 0; i < 4; ++i) {
    p.x(i, 0) = i + 1;
    p.x(i, 1) = 0.5 * i;
  }
  std::string args = coded::ShareGradientPrefix({p});
  coded::AppendReals(&args, {0.25, -1});
  static const KernelRegistry registry = BuiltinKernels();
  const Kernel* k = registry.Find("gradient_worker");
  REQUIRE(k != nullptr);
  auto run = [&](KernelShare share) {
    CancelToken token;
    KernelContext ctx(args, &token);
    ctx.SetShare(share);
    return k->fn(ctx);
  };
  auto out = run(KernelShare{1, 2, 4});  // rows 1 and 2
  REQUIRE(out.ok());
  coded::LsqPartition rows12;
  rows12.x = p.x.RowBlock(1, 2);
  rows12.y = {2, 3};
  CHECK(*coded::DecodeVector(*out) == coded::LsqGradient(rows12, {0.25, -1}));
  CHECK_FALSE(run(KernelShare{}).ok());          // not sent as a divisible job
  CHECK_FALSE(run(KernelShare{0, 4, 5}).ok());   // the share's total is not the row count
}
