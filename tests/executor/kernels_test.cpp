#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tailcut/coding/task_args.h"
#include "tailcut/common/kernel_args.h"
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
  CHECK(r.Names() ==
        std::vector<std::string>{"coded_matmul", "exec", "gradient_worker", "matmul", "noop", "shell", "sleep", "spin"});
  CHECK(r.NamesList() == "coded_matmul, exec, gradient_worker, matmul, noop, shell, sleep, spin");
  // Side effects (docs/POLICIES.md): the pure built-ins are idempotent, shell and exec are not.
  for (const std::string& name : r.Names())
    CHECK(r.Find(name)->traits.idempotent == (name != "shell" && name != "exec"));
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
        "unknown kernel(s) 'foo', 'bar' (known: coded_matmul, exec, gradient_worker, matmul, noop, shell, sleep, spin)");
  CHECK(r.Names() == std::vector<std::string>{"noop", "shell"});
  REQUIRE(r.Restrict({}).ok());
  CHECK(r.Names().empty());
}

TEST_CASE("a kernel's progress stays a fraction: out of range is clamped, nan ignored") {
  CancelToken cancel;
  KernelContext ctx("", &cancel);
  ctx.ReportProgress(0.5f);
  ctx.ReportProgress(std::nanf(""));  // a python function's, through its worker: user code
  CHECK(ctx.progress() == 0.5f);
  ctx.ReportProgress(7.0f);
  CHECK(ctx.progress() == 1.0f);
  ctx.ReportProgress(-INFINITY);
  CHECK(ctx.progress() == 0.0f);
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

// ----------------------------------------------------- identity and exec --

namespace {

ExecOptions Allow(std::vector<std::string> allow, double cpu_s = 0) {
  ExecOptions o;
  o.allow = std::move(allow);
  o.cpu_s = cpu_s;
  return o;
}

KernelIdentity Someone() { return KernelIdentity{.job_id = 42, .task_index = 7, .task_count = 9, .attempt_id = 1234, .is_copy = true}; }

// Runs `kernel` with `args` as attempt Someone(), on a registry whose exec
// runs programs under `allow`.
StatusOr<std::string> RunAs(const char* kernel, std::string_view args, ExecOptions exec = {},
                            KernelShare share = {}, float* progress = nullptr) {
  KernelRegistry r = BuiltinKernels(exec);
  CancelToken token;
  KernelContext ctx(args, &token);
  ctx.SetIdentity(Someone());
  ctx.SetShare(share);
  auto out = r.Find(kernel)->fn(ctx);
  if (progress) *progress = ctx.progress();
  return out;
}

// A script in a fresh folder, executable.
std::string Script(const std::string& dir, const std::string& body) {
  std::filesystem::create_directories(dir);
  std::string path = dir + "/run.sh";
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  chmod(path.c_str(), 0755);
  return path;
}

std::string TempDir(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tailcut-kt-" + name + "-" + std::to_string(getpid()))).string();
}

}  // namespace

TEST_CASE("a shell task knows who it is from its environment") {
  auto out = RunAs("shell", "echo $TAILCUT_JOB_ID $TAILCUT_TASK_INDEX $TAILCUT_TASK_COUNT $TAILCUT_ATTEMPT_ID "
                            "$TAILCUT_IS_COPY $TAILCUT_SHARE_OFFSET $TAILCUT_SHARE_SIZE $TAILCUT_SHARE_TOTAL",
                   {}, KernelShare{10, 5, 100});
  REQUIRE(out.ok());
  CHECK(*out == "42 7 9 1234 1 10 5 100\n");
  auto no_share = RunAs("shell", "echo \"[${TAILCUT_SHARE_TOTAL-unset}]\"");
  REQUIRE(no_share.ok());
  CHECK(*no_share == "[unset]\n");
}

TEST_CASE("per-task argument templates expand {index} and {count} only") {
  CHECK(ExpandTaskArgs("x={index} n={count} {other} {index}", 3, 10) == "x=3 n=10 {other} 3");
  CHECK(ExpandTaskArgs("no tokens", 1, 2) == "no tokens");
  CHECK(HasTaskArgsTemplate("arg=/bin/x\narg={count}"));
  CHECK_FALSE(HasTaskArgsTemplate("awk '{print}'"));
}

TEST_CASE("exec args: argv, env, cwd and limits round-trip, mistakes name the line") {
  ExecArgs a;
  a.argv = {"/usr/bin/env", "a b", "x=y"};
  a.env = {{"SEED", "7"}};
  a.cwd = "/tmp";
  a.cpu_s = 2.5;
  a.memory_mb = 64;
  auto text = FormatExecArgs(a);
  REQUIRE(text.ok());
  auto back = ParseExecArgs(*text);
  REQUIRE(back.ok());
  CHECK(back->argv == a.argv);
  CHECK(back->env == a.env);
  CHECK(back->cwd == "/tmp");
  CHECK(back->cpu_s == 2.5);
  CHECK(back->memory_mb == 64);
  CHECK(ParseExecArgs("arg=/bin/true\nagr=x").status().message() ==
        "exec args line 2: unknown key 'agr' (arg, env, cwd, cpu_s, memory_mb)");
  CHECK_FALSE(ParseExecArgs("env=NOVALUE\narg=/bin/true").ok());
  CHECK_FALSE(ParseExecArgs("cwd=/tmp").ok());  // no program
  a.argv.push_back("line\nbreak");
  CHECK_FALSE(FormatExecArgs(a).ok());
}

TEST_CASE("exec runs allowed programs without a shell, in a scratch folder it removes") {
  const std::string dir = TempDir("exec"), scratch_root = TempDir("scratch");
  std::string prog = Script(dir, "echo \"$TAILCUT_TASK_INDEX/$TAILCUT_TASK_COUNT $1 $SEED\"; pwd; "
                                 "test \"$(pwd)\" = \"$TAILCUT_SCRATCH_DIR\" && touch left-behind; "
                                 "echo 0.25 >&$TAILCUT_PROGRESS_FD; echo 0.75 >&$TAILCUT_PROGRESS_FD");
  ExecOptions opt;
  opt.allow = {dir + "/"};
  opt.scratch_dir = scratch_root;
  float progress = 0;
  auto out = RunAs("exec", "arg=" + prog + "\narg=two words\nenv=SEED=5\nenv=TAILCUT_TASK_INDEX=999\n", opt, {},
                   &progress);
  REQUIRE(out.ok());
  // argv as given (no word splitting); the task's identity wins over its env map.
  CHECK(out->rfind("7/9 two words 5\n" + scratch_root + "/attempt-1234-", 0) == 0);
  CHECK(progress == Approx(0.75));
  CHECK(std::filesystem::is_empty(scratch_root));  // the scratch folder is gone

  auto refused = RunAs("exec", "arg=/bin/echo\narg=hi", opt);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("/bin/echo is not in this executor's exec_allow (" + dir + "/)") !=
        std::string::npos);
  CHECK_FALSE(RunAs("exec", "arg=" + dir + "/../../bin/echo", opt).ok());  // normalized first
  CHECK(RunAs("exec", "arg=run.sh", opt).status().message().find("absolute path") != std::string::npos);
  CHECK(RunAs("exec", "arg=/bin/true", ExecOptions{}).status().message().find("(empty)") != std::string::npos);

  auto failing = RunAs("exec", "arg=/bin/sh\narg=-c\narg=echo oops >&2; exit 4", Allow({"/bin/sh"}));
  REQUIRE_FALSE(failing.ok());
  CHECK(failing.status().message() == "exec: exit code 4: oops");
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(scratch_root);
}

TEST_CASE("exec limits: a CPU-time limit kills a spinning program, the tighter of task and executor wins") {
  ExecOptions opt = Allow({"/bin/sh"}, 1);
  auto t0 = std::chrono::steady_clock::now();
  auto spun = RunAs("exec", "arg=/bin/sh\narg=-c\narg=while :; do :; done\ncpu_s=30", opt);
  REQUIRE_FALSE(spun.ok());
  CHECK(spun.status().message().find("cpu_s limit") != std::string::npos);
  CHECK(Seconds(t0) < 10.0);
  // Address space: a program that maps more than it may fails.
  auto big = RunAs("exec", "arg=/bin/sh\narg=-c\narg=x=$(head -c 50000000 /dev/zero | tr '\\0' a); echo ${#x}\nmemory_mb=16",
                   Allow({"/bin/sh"}));
  CHECK_FALSE(big.ok());
}

TEST_CASE("exec cancellation kills the program's whole process group") {
  const std::string dir = TempDir("cancel");
  std::string pidfile = dir + "/child.pid";
  std::string prog = Script(dir, "sleep 30 & echo $! > " + pidfile + "; wait");
  KernelRegistry r = BuiltinKernels(Allow({prog}));
  CancelToken token;
  std::string args = "arg=" + prog;
  KernelContext ctx(args, &token);
  std::thread canceller([&] {
    std::this_thread::sleep_for(300ms);
    token.Cancel();
  });
  auto t0 = std::chrono::steady_clock::now();
  auto out = r.Find("exec")->fn(ctx);
  canceller.join();
  CHECK_FALSE(out.ok());
  CHECK(Seconds(t0) < 20.0);
  pid_t grandchild = 0;
  std::ifstream(pidfile) >> grandchild;
  REQUIRE(grandchild > 0);
  // Dead: gone, or a zombie where no init reaps orphans (containers).
  auto dead = [&] {
    std::ifstream stat("/proc/" + std::to_string(grandchild) + "/stat");
    std::string pid, comm, state;
    return !(stat >> pid >> comm >> state) || state == "Z";
  };
  for (int i = 0; i < 200 && !dead(); ++i) std::this_thread::sleep_for(10ms);
  CHECK(dead());  // the background sleep died with its group
  std::filesystem::remove_all(dir);
}
