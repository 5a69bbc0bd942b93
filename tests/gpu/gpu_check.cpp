// gpu_check: GPU twins vs CPU twins on this machine's CUDA devices.
// Exit 0 = agree, 1 = disagree or a GPU error, 77 = skipped (no CUDA build
// or no device; ctest shows SKIPPED via SKIP_RETURN_CODE).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "tailcut/executor/kernel.h"
#include "tailcut/coding/task_args.h"

using namespace tailcut;
using namespace tailcut::executor;

namespace {

struct Outcome {
  std::string out;
  bool gpu = false;
  double seconds = 0;
  std::string error;
};

Outcome Run(const KernelRegistry& reg, const std::string& kernel, const std::string& args, uint32_t gpus) {
  CancelToken token;
  KernelContext ctx(args, &token);
  ctx.SetGpu(gpus, 0);
  auto t0 = std::chrono::steady_clock::now();
  auto r = reg.Find(kernel)->fn(ctx);
  Outcome o;
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  o.gpu = ctx.ran_on_gpu();
  if (r.ok()) o.out = *r; else o.error = r.status().message();
  return o;
}

double MaxRelDiff(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return 1e300;
  double scale = 1e-300, diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::abs(a[i]));
    diff = std::max(diff, std::abs(a[i] - b[i]));
  }
  return diff / scale;
}

}  // namespace

int main() {
  std::string why;
  int gpus = GpuCount(&why);
  if (gpus == 0) {
    std::printf("skipped: no CUDA device: %s\n", why.c_str());
    if (BuiltWithCuda()) {  // the GPU code is built: show that the module loads and what CUDA says
      auto n = CudaRuntimeDeviceCount();
      std::printf("CUDA module: %s\n", n.ok() ? (std::to_string(*n) + " device(s)").c_str()
                                               : n.status().message().c_str());
    }
    return 77;
  }
  std::printf("%d CUDA device(s)\n", gpus);
  KernelRegistry reg = BuiltinKernels();
  int failures = 0;
  auto check = [&](const char* what, bool ok, const std::string& detail) {
    std::printf("%-44s %s %s\n", what, ok ? "ok  " : "FAIL", detail.c_str());
    failures += !ok;
  };

  // matmul: checksums agree to rounding; and a GFLOP/s comparison.
  for (int n : {64, 512, 1024}) {
    std::string args = "n=" + std::to_string(n) + " seed=3";
    Outcome c = Run(reg, "matmul", args, 0), g = Run(reg, "matmul", args, 1);
    double cs = std::atof(c.out.c_str() + 9), gs = std::atof(g.out.c_str() + 9);
    double rel = std::abs(cs - gs) / std::max(1.0, std::abs(cs));
    char d[200];
    std::snprintf(d, sizeof d, "cpu %.3f GFLOP/s, gpu %.3f GFLOP/s (incl. transfer), rel diff %.2e %s",
                  2.0 * n * n * n / c.seconds / 1e9, 2.0 * n * n * n / g.seconds / 1e9, rel, g.error.c_str());
    check(("matmul n=" + std::to_string(n)).c_str(), g.gpu && g.error.empty() && rel < 1e-9, d);
  }

  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  coding::Matrix a(300, 40);
  for (double& v : a.data()) v = normal(rng);
  std::vector<double> x(40);
  for (double& v : x) v = normal(rng);
  {
    std::string args = coded::MatmulArgs(0, a, x);
    Outcome c = Run(reg, "coded_matmul", args, 0), g = Run(reg, "coded_matmul", args, 1);
    double rel = g.error.empty() ? MaxRelDiff(*coded::DecodeVector(c.out), *coded::DecodeVector(g.out)) : 1;
    check("coded_matmul 300x40", g.gpu && rel < 1e-12, "rel diff " + std::to_string(rel) + " " + g.error);
  }
  for (coded::Loss loss : {coded::Loss::kLeastSquares, coded::Loss::kLogistic}) {
    std::vector<coded::LsqPartition> parts(2);
    for (auto& p : parts) {
      p.x = coding::Matrix(500, 12);
      for (double& v : p.x.data()) v = normal(rng);
      p.y.resize(500);
      for (double& v : p.y) v = loss == coded::Loss::kLogistic ? (normal(rng) > 0) : normal(rng);
    }
    std::vector<double> w(12);
    for (double& v : w) v = 0.3 * normal(rng);
    std::string args = coded::GradientArgs(1, {0.5, -1.5}, {&parts[0], &parts[1]}, w, loss);
    Outcome c = Run(reg, "gradient_worker", args, 0), g = Run(reg, "gradient_worker", args, 1);
    double rel = g.error.empty() ? MaxRelDiff(*coded::DecodeVector(c.out), *coded::DecodeVector(g.out)) : 1;
    check((std::string("gradient_worker ") + coded::LossName(loss)).c_str(), g.gpu && rel < 1e-10,
          "rel diff " + std::to_string(rel) + " " + g.error);
  }
  std::printf("%s\n", failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}
