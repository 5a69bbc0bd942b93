// Coded jobs end to end through the scheduler core: encode, run the kernels
// on simulated workers (some slow), complete at any k of n, decode.
#include <catch2/catch.hpp>

#include <random>

#include "sim.h"
#include "tailcut/policies/coded_jobs.h"
#include "tailcut/policies/registry.h"

using namespace tailcut;
using tailcut::testing::Sim;

namespace {

coding::Matrix Random(int r, int c, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  coding::Matrix m(r, c);
  for (double& d : m.data()) d = u(rng);
  return m;
}

// Kernel outputs computed from the task's args, as an executor would.
void RunKernels(Sim& s, JobId job) {
  s.output = [&s, job](const LaunchCmd& l) {
    const TaskDef* t = s.h.core.TaskOf(job, l.task);
    REQUIRE(t);
    auto out = t->kernel == coded::kMatmulKernel ? coded::RunMatmulKernel(t->args) : coded::RunGradientKernel(t->args);
    REQUIRE(out.ok());
    return *out;
  };
}

}  // namespace

TEST_CASE("vector round trip and malformed input") {
  std::vector<double> v = {1.0 / 3, -2e-300, 12345.678};
  auto back = coded::DecodeVector(coded::EncodeVector(v));
  REQUIRE(back.ok());
  CHECK(*back == v);
  CHECK_FALSE(coded::DecodeVector("tcv1 3 1 2").ok());
  CHECK_FALSE(coded::DecodeVector("junk").ok());
  CHECK_FALSE(coded::RunMatmulKernel("tcmm1 0 2 2 1 2 3 4 3 1 1 1").ok());  // x too long
}

// A few header bytes must not make the executor allocate for millions of
// values the args do not hold (issue #11).
TEST_CASE("coded kernel args asking for more values than they carry are refused before allocating") {
  CHECK_FALSE(coded::DecodeVector("tcv1 16777216 1").ok());
  CHECK_FALSE(coded::ParseMatmulArgs("tcmm1 0 4096 4096 1 2").ok());
  CHECK_FALSE(coded::ParseGradientArgs("tcgw1 0 16777216 65536 1").ok());
  CHECK_FALSE(coded::ParseGradientArgs("tcgw1 0 4 1 1.0 4194304 1 2").ok());
  auto ok = coded::ParseMatmulArgs("tcmm1 0 1 2 1 2 2 3 4");
  REQUIRE(ok.ok());
  CHECK(ok->a.size() == 2);
}

TEST_CASE("MDS coded mat-vec: any k of n through the core reproduces A x") {
  std::mt19937 rng(7);
  auto code = coding::MdsCode::Systematic(6, 4);
  REQUIRE(code.ok());
  coding::Matrix a = Random(10, 5, rng);
  std::vector<double> x = {0.5, -1, 2, 0.25, 3};
  std::vector<double> want(10, 0.0);
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 5; ++j) want[i] += a(i, j) * x[j];
  auto job = coded::MakeCodedMatVecJob(*code, a, x);
  REQUIRE(job.ok());
  CHECK(job->TaskCount() == 6);
  CHECK(job->rule.kind == CompletionKind::kKOfN);
  CHECK(job->rule.k == 4);

  // Different slow worker sets: systematic blocks lost, parity lost, mixed.
  for (std::vector<int> slow : {std::vector<int>{0, 1}, {4, 5}, {2, 5}, {}}) {
    auto chain = MakePolicyChain("default,coded", Config());
    REQUIRE(chain.ok());
    Sim s(Sim::Opts(), std::move(chain).value());
    for (int i = 0; i < 6; ++i) s.Exec(1, std::find(slow.begin(), slow.end(), i) != slow.end() ? 20.0 : 1.0 + 0.1 * i);
    auto id = s.h.core.SubmitJob(*job);
    REQUIRE(id.ok());
    RunKernels(s, *id);
    s.Sync();
    REQUIRE(s.RunUntil(*id, 50));
    CHECK(s.h.finished[*id].state == JobState::kSucceeded);
    CHECK(s.h.clock.Now() < 5);
    auto outs = s.h.core.JobOutputs(*id);
    REQUIRE(outs.ok());
    CHECK(outs->size() == 4);
    for (auto& o : *outs) CHECK(std::find(slow.begin(), slow.end(), static_cast<int>(o.task)) == slow.end());
    auto y = coded::DecodeCodedMatVec(*code, 10, *outs);
    REQUIRE(y.ok());
    REQUIRE(y->size() == 10);
    for (int i = 0; i < 10; ++i) CHECK((*y)[i] == Approx(want[i]).margin(1e-9));
  }
}

TEST_CASE("gradient-coded round through the core reproduces the full gradient") {
  std::mt19937 rng(11);
  for (bool cyclic : {false, true}) {
    int n = 6, s_ = cyclic ? 2 : 1;
    auto code =
        cyclic ? coding::GradientCode::CyclicRepetition(n, s_) : coding::GradientCode::FractionalRepetition(n, s_);
    REQUIRE(code.ok());
    std::vector<coded::LsqPartition> parts(n);
    std::vector<double> w = {0.3, -0.7, 1.1};
    std::vector<double> want(3, 0.0);
    for (auto& p : parts) {
      p.x = Random(4, 3, rng);
      p.y = {1, -1, 0.5, 2};
      auto g = coded::LsqGradient(p, w);
      for (int j = 0; j < 3; ++j) want[j] += g[j];
    }
    auto job = coded::MakeGradientRoundJob(*code, parts, w);
    REQUIRE(job.ok());
    CHECK(job->rule.k == static_cast<uint32_t>(n - s_));
    auto chain = MakePolicyChain("default,gradient_code", Config());
    REQUIRE(chain.ok());
    Sim sim(Sim::Opts(), std::move(chain).value());
    for (int i = 0; i < n; ++i) sim.Exec(1, i < s_ ? 30.0 : 1.0);  // the first s workers straggle
    auto id = sim.h.core.SubmitJob(*job);
    REQUIRE(id.ok());
    RunKernels(sim, *id);
    sim.Sync();
    REQUIRE(sim.RunUntil(*id, 60));
    CHECK(sim.h.clock.Now() < 5);
    auto outs = sim.h.core.JobOutputs(*id);
    REQUIRE(outs.ok());
    CHECK(outs->size() == static_cast<size_t>(n - s_));
    auto g = coded::DecodeGradientRound(*code, *outs);
    REQUIRE(g.ok());
    REQUIRE(g->size() == 3);
    for (int j = 0; j < 3; ++j) CHECK((*g)[j] == Approx(want[j]).margin(1e-8));
  }
}

// Speed shares (docs/JOBS.md): share args hold all rows; any split of them
// into shares sums to the full gradient, and a share that does not fit the
// args is refused.
TEST_CASE("share gradient args: any split of the rows sums to the full gradient") {
  std::mt19937 rng(5);
  const int dim = 4;
  std::vector<coded::LsqPartition> parts(3);
  long rows = 0;
  for (int p = 0; p < 3; ++p) {
    parts[p].x = Random(5 + p, dim, rng);  // uneven partitions: 5, 6, 7 rows
    parts[p].y.resize(parts[p].x.rows());
    for (double& y : parts[p].y) y = std::uniform_real_distribution<double>(-1, 1)(rng);
    rows += parts[p].x.rows();
  }
  std::vector<double> w = {0.5, -1.0 / 3, 2.0, 1e-3};
  for (coded::Loss loss : {coded::Loss::kLeastSquares, coded::Loss::kLogistic}) {
    std::vector<double> full(dim, 0.0);
    for (auto& p : parts) {
      auto g = loss == coded::Loss::kLogistic ? coded::LogisticGradient(p, w) : coded::LsqGradient(p, w);
      for (int j = 0; j < dim; ++j) full[j] += g[j];
    }
    std::string args = coded::ShareGradientPrefix(parts, loss);
    coded::AppendReals(&args, w);
    REQUIRE(coded::IsShareGradientArgs(args));
    for (std::vector<uint64_t> split : {std::vector<uint64_t>{18}, {1, 16, 1}, {7, 0, 11}, {9, 9}}) {
      std::vector<double> sum(dim, 0.0);
      uint64_t begin = 0;
      for (uint64_t count : split) {
        auto t = coded::ParseShareGradientArgs(args, begin, count, static_cast<uint64_t>(rows));
        REQUIRE(t.ok());
        CHECK(t->parts.at(0).x.rows() == static_cast<int>(count));
        auto g = coded::ComputeGradient(*t);
        for (int j = 0; j < dim; ++j) sum[j] += g[j];
        begin += count;
      }
      for (int j = 0; j < dim; ++j) CHECK(sum[j] == Approx(full[j]).epsilon(1e-12));
    }
  }
  std::string args = coded::ShareGradientPrefix(parts);
  coded::AppendReals(&args, w);
  CHECK_FALSE(coded::ParseShareGradientArgs(args, 0, 5, 17).ok());   // total is not the row count
  CHECK_FALSE(coded::ParseShareGradientArgs(args, 10, 9, 18).ok());  // past the end
  CHECK_FALSE(coded::ParseShareGradientArgs(args, 19, 0, 18).ok());
  CHECK_FALSE(coded::ParseShareGradientArgs("tcgs1 lsq 4 1000000 20\n1 2", 0, 1, 1000000).ok());  // rows it lacks
  CHECK_FALSE(coded::ParseShareGradientArgs(args.substr(0, args.rfind(' ')), 0, 18, 18).ok());    // w cut short
  CHECK_FALSE(coded::ParseGradientArgs(args).ok());                                               // not tcgw args
}
