// CPU twins against references, GPU twins against CPU twins (when a CUDA
// device exists; otherwise reported as skipped), and GPU demand end to end.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <random>
#include <thread>

#include "tailcut/client/client.h"
#include "tailcut/executor/executor.h"
#include "tailcut/executor/kernel.h"
#include "tailcut/policies/coded_jobs.h"
#include "tailcut/server/server.h"

using namespace tailcut;
using namespace tailcut::executor;

namespace {

struct Ran {
  StatusOr<std::string> out = Status::Internal("not run");
  bool gpu = false;
};

Ran RunKernel(const std::string& kernel, const std::string& args, uint32_t gpus) {
  static const KernelRegistry reg = BuiltinKernels();
  CancelToken token;
  KernelContext ctx(args, &token);
  ctx.SetGpu(gpus, 0);
  const Kernel* k = reg.Find(kernel);
  REQUIRE(k != nullptr);
  Ran r;
  r.out = k->fn(ctx);
  r.gpu = ctx.ran_on_gpu();
  return r;
}

std::vector<double> Vec(const Ran& r) {
  REQUIRE(r.out.ok());
  auto v = coded::DecodeVector(r.out.value());
  REQUIRE(v.ok());
  return *v;
}

coded::LsqPartition RandomPartition(std::mt19937_64& rng, int rows, int dim, bool labels01) {
  std::normal_distribution<double> normal;
  coded::LsqPartition p;
  p.x = coding::Matrix(rows, dim);
  for (double& v : p.x.data()) v = normal(rng);
  p.y.resize(static_cast<size_t>(rows));
  for (double& v : p.y) v = labels01 ? (normal(rng) > 0 ? 1.0 : 0.0) : normal(rng);
  return p;
}

// Direct formulas, written independently of the kernels.
std::vector<double> RefGradient(coded::Loss loss, const coded::LsqPartition& p, const std::vector<double>& w) {
  std::vector<double> g(w.size(), 0.0);
  for (int i = 0; i < p.x.rows(); ++i) {
    double z = 0;
    for (size_t j = 0; j < w.size(); ++j) z += p.x(i, static_cast<int>(j)) * w[j];
    double r = loss == coded::Loss::kLogistic ? 1.0 / (1.0 + std::exp(-z)) - p.y[i] : z - p.y[i];
    for (size_t j = 0; j < w.size(); ++j) g[j] += r * p.x(i, static_cast<int>(j));
  }
  return g;
}

bool SkipWithoutGpu() {
  std::string why;
  if (GpuCount(&why) > 0) return false;
  WARN("skipped: no CUDA device: " << why);
  return true;
}

}  // namespace

TEST_CASE("gpu: matmul CPU twin matches a naive triple loop") {
  for (int n : {1, 17, 70, 130}) {
    auto a = MatmulInput(n, 5), b = MatmulInput(n, 6);
    double naive = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double c = 0;
        for (int k = 0; k < n; ++k) c += a[i * n + k] * b[k * n + j];
        naive += c;
      }
    CHECK(MatmulChecksum(a, b, n) == Approx(naive).epsilon(1e-12).margin(1e-9));
  }
}

TEST_CASE("gpu: coded_matmul and gradient_worker are executor kernels") {
  KernelRegistry reg = BuiltinKernels();
  CHECK(reg.Find("coded_matmul") != nullptr);
  CHECK(reg.Find("gradient_worker") != nullptr);
  CHECK(reg.Find("matmul") != nullptr);
}

TEST_CASE("gpu: coded_matmul CPU twin matches A x and the plugins' kernel") {
  std::mt19937_64 rng(1);
  std::normal_distribution<double> normal;
  coding::Matrix a(23, 9);
  for (double& v : a.data()) v = normal(rng);
  std::vector<double> x(9);
  for (double& v : x) v = normal(rng);
  std::string args = coded::MatmulArgs(2, a, x);
  Ran r = RunKernel("coded_matmul", args, 0);
  CHECK_FALSE(r.gpu);
  std::vector<double> y = Vec(r);
  REQUIRE(y.size() == 23);
  for (int i = 0; i < 23; ++i) {
    double ref = 0;
    for (int j = 0; j < 9; ++j) ref += a(i, j) * x[j];
    CHECK(y[i] == Approx(ref).epsilon(1e-13).margin(1e-13));
  }
  CHECK(*r.out == *coded::RunMatmulKernel(args));
  CHECK_FALSE(RunKernel("coded_matmul", "tcmm1 0 2 2 1 2 3 4 3 1 1 1", 0).out.ok());
}

TEST_CASE("gpu: gradient_worker CPU twin matches the least-squares and logistic formulas") {
  std::mt19937_64 rng(2);
  std::normal_distribution<double> normal;
  for (coded::Loss loss : {coded::Loss::kLeastSquares, coded::Loss::kLogistic}) {
    INFO("loss " << coded::LossName(loss));
    bool logistic = loss == coded::Loss::kLogistic;
    auto p0 = RandomPartition(rng, 40, 5, logistic), p1 = RandomPartition(rng, 31, 5, logistic);
    std::vector<double> w(5);
    for (double& v : w) v = 0.5 * normal(rng);
    const double c0 = 0.75, c1 = -2.0;
    std::string args = coded::GradientArgs(3, {c0, c1}, {&p0, &p1}, w, loss);
    CHECK(args.rfind(logistic ? "tcgw2 logistic 3 5 2" : "tcgw1 3 5 2", 0) == 0);
    std::vector<double> g = Vec(RunKernel("gradient_worker", args, 0));
    auto r0 = RefGradient(loss, p0, w), r1 = RefGradient(loss, p1, w);
    for (int j = 0; j < 5; ++j) CHECK(g[j] == Approx(c0 * r0[j] + c1 * r1[j]).epsilon(1e-12).margin(1e-12));
    // The gradient is the loss's derivative: central differences agree.
    for (int j = 0; j < 5; ++j) {
      auto wp = w, wm = w;
      wp[j] += 1e-6;
      wm[j] -= 1e-6;
      double fd = (coded::PartitionLoss(loss, p0, wp) - coded::PartitionLoss(loss, p0, wm)) / 2e-6;
      CHECK(fd == Approx(r0[j]).epsilon(1e-5).margin(1e-6));
    }
  }
  CHECK_FALSE(RunKernel("gradient_worker", "tcgw2 hinge 0 1 0 0", 0).out.ok());
}

TEST_CASE("gpu: a gradient round decodes to the full gradient with either loss") {
  std::mt19937_64 rng(3);
  auto code = coding::GradientCode::CyclicRepetition(4, 1);
  REQUIRE(code.ok());
  for (coded::Loss loss : {coded::Loss::kLeastSquares, coded::Loss::kLogistic}) {
    std::vector<coded::LsqPartition> parts;
    for (int i = 0; i < 4; ++i) parts.push_back(RandomPartition(rng, 15, 3, loss == coded::Loss::kLogistic));
    std::vector<double> w = {0.1, -0.2, 0.3};
    auto job = coded::MakeGradientRoundJob(*code, parts, w, "round", loss);
    REQUIRE(job.ok());
    CHECK(job->rule.k == 3);
    std::vector<CommittedOutput> outs;
    for (TaskIndex t : {0u, 2u, 3u}) {  // worker 1 straggles
      Ran r = RunKernel("gradient_worker", job->tasks[t].args, 0);
      REQUIRE(r.out.ok());
      outs.push_back(CommittedOutput{t, t + 1, 1, 0.0, *r.out});
    }
    auto g = coded::DecodeGradientRound(*code, outs);
    REQUIRE(g.ok());
    std::vector<double> ref(3, 0.0);
    for (auto& p : parts) {
      auto gp = RefGradient(loss, p, w);
      for (int j = 0; j < 3; ++j) ref[j] += gp[j];
    }
    for (int j = 0; j < 3; ++j) CHECK((*g)[j] == Approx(ref[j]).epsilon(1e-9).margin(1e-9));
  }
}

TEST_CASE("gpu: a GPU demand without a GPU runs the CPU twin") {
  if (GpuCount() > 0) {
    WARN("skipped: this machine has a CUDA device (the GPU path is checked below)");
    return;
  }
  std::string why;
  CHECK(GpuCount(&why) == 0);
  CHECK_FALSE(why.empty());
  Ran cpu = RunKernel("matmul", "n=33 seed=2", 0), asked = RunKernel("matmul", "n=33 seed=2", 1);
  CHECK_FALSE(asked.gpu);
  REQUIRE(asked.out.ok());
  CHECK(*asked.out == *cpu.out);
}

TEST_CASE("gpu: GPU twins agree with the CPU twins") {
  if (SkipWithoutGpu()) return;
  {
    Ran c = RunKernel("matmul", "n=200 seed=4", 0), g = RunKernel("matmul", "n=200 seed=4", 1);
    CHECK(g.gpu);
    REQUIRE(g.out.ok());
    double cs = std::stod(c.out->substr(9)), gs = std::stod(g.out->substr(9));
    CHECK(gs == Approx(cs).epsilon(1e-10).margin(1e-8));
  }
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  coding::Matrix a(77, 13);
  for (double& v : a.data()) v = normal(rng);
  std::vector<double> x(13);
  for (double& v : x) v = normal(rng);
  std::string margs = coded::MatmulArgs(0, a, x);
  Ran mc = RunKernel("coded_matmul", margs, 0), mg = RunKernel("coded_matmul", margs, 1);
  CHECK(mg.gpu);
  auto yc = Vec(mc), yg = Vec(mg);
  for (size_t i = 0; i < yc.size(); ++i) CHECK(yg[i] == Approx(yc[i]).epsilon(1e-12).margin(1e-12));
  for (coded::Loss loss : {coded::Loss::kLeastSquares, coded::Loss::kLogistic}) {
    auto p0 = RandomPartition(rng, 300, 7, loss == coded::Loss::kLogistic);
    auto p1 = RandomPartition(rng, 120, 7, loss == coded::Loss::kLogistic);
    std::vector<double> w(7, 0.1);
    std::string args = coded::GradientArgs(0, {1.0, -0.5}, {&p0, &p1}, w, loss);
    Ran c = RunKernel("gradient_worker", args, 0), g = RunKernel("gradient_worker", args, 1);
    CHECK(g.gpu);
    auto gc = Vec(c), gg = Vec(g);
    for (size_t j = 0; j < gc.size(); ++j) CHECK(gg[j] == Approx(gc[j]).epsilon(1e-10).margin(1e-10));
  }
}

TEST_CASE("gpu: executors advertise their GPUs and a GPU job is infeasible without one") {
  ServerOptions so;
  so.executor_endpoint = "tcp://127.0.0.1:*";
  so.client_endpoint = "tcp://127.0.0.1:*";
  SchedulerServer server(so);
  REQUIRE(server.Bind().ok());
  std::thread loop([&] { server.Run(); });
  ExecutorOptions eo;
  eo.scheduler = server.executor_endpoint();
  eo.slots = 1;
  eo.threads = 1;
  eo.name = "gpu-test";
  Executor ex(eo);
  std::thread ex_thread([&] { (void)ex.Run(); });
  ClientOptions co;
  co.endpoint = server.client_endpoint();
  Client client(co);
  std::vector<wire::ExecutorInfo> list;
  for (int i = 0; i < 200 && list.empty(); ++i) {
    auto l = client.Executors();
    if (l.ok()) list = *l;
    if (list.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(list.size() == 1);
  CHECK(static_cast<int>(list[0].gpus()) == GpuCount());
  wire::JobSpec job = FanoutJob("matmul", "n=16", 1);
  job.mutable_template_()->mutable_demand()->set_gpus(1);
  auto id = client.Submit(job);
  if (GpuCount() == 0) {
    REQUIRE_FALSE(id.ok());
    CHECK(id.status().message().find("INFEASIBLE") != std::string::npos);
  } else {
    REQUIRE(id.ok());
    auto st = client.Wait(*id);
    REQUIRE(st.ok());
    CHECK(st->state() == wire::JOB_SUCCEEDED);
  }
  ex.Stop();
  ex_thread.join();
  server.Stop();
  loop.join();
}

namespace {
bool Mapped(const std::string& lib) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(lib) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST_CASE("gpu: CUDA is loaded only on demand, through the module") {
  if (!BuiltWithCuda()) {
    CHECK(CudaRuntimeDeviceCount().status().message() == "built without CUDA");
    return;
  }
  if (GpuCount() == 0) {
    // Discovery (NVML) and the CPU fallbacks above never started CUDA.
    CHECK_FALSE(Mapped("libcudart"));
    CHECK_FALSE(Mapped("libtailcut_cuda"));
  }
  auto n = CudaRuntimeDeviceCount();  // loads the module and asks cudart
  INFO(n.status().message());
  CHECK(n.status().message().find("cannot load the CUDA module") == std::string::npos);
  CHECK(Mapped("libtailcut_cuda.so"));
  CHECK(Mapped("libcudart"));
  if (GpuCount() == 0) {
    REQUIRE_FALSE(n.ok());
    CHECK(n.status().message().rfind("CUDA runtime: ", 0) == 0);
  } else {
    REQUIRE(n.ok());
    CHECK(*n == GpuCount());
  }
}
