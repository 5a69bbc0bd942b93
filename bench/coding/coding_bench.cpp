// Encode / decode cost of the coding library.
//   build/bench/coding/coding_bench --benchmark_min_time=0.1
#include <benchmark/benchmark.h>

#include <random>
#include <utility>
#include <vector>

#include "tailcut/coding/gradient_code.h"
#include "tailcut/coding/matrix.h"
#include "tailcut/coding/mds_code.h"

namespace tc = tailcut::coding;

namespace {

tc::Matrix RandomMatrix(int r, int c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd;
  tc::Matrix m(r, c);
  for (double& v : m.data()) v = nd(rng);
  return m;
}

// Args: n, k, rows of A (A is rows x 256).
void BM_MdsEncode(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1));
  const int rows = static_cast<int>(state.range(2));
  auto code = tc::MdsCode::Systematic(n, k).value();
  tc::Matrix a = RandomMatrix(rows, 256, 1);
  for (auto _ : state) benchmark::DoNotOptimize(code.Encode(a));
  state.SetBytesProcessed(state.iterations() * static_cast<long>(rows) * 256 * 8);
}

// Decode the worst case: n-k data blocks lost (the largest linear system).
// Args: n, k, rows of A, columns of X.
void BM_MdsDecodeWorst(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1));
  const int rows = static_cast<int>(state.range(2)), xc = static_cast<int>(state.range(3));
  auto code = tc::MdsCode::Systematic(n, k).value();
  tc::Matrix a = RandomMatrix(rows, 64, 2);
  tc::Matrix x = RandomMatrix(64, xc, 3);
  auto enc = code.Encode(a);
  std::vector<std::pair<int, tc::Matrix>> res;
  for (int i = n - k; i < n; ++i) res.emplace_back(i, enc[i].Multiply(x).value());
  for (auto _ : state) benchmark::DoNotOptimize(code.Decode(res, rows));
}

// Decoding-vector computation for cyclic repetition with s stragglers.
void BM_GradientDecodingVector(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0)), s = static_cast<int>(state.range(1));
  auto code = tc::GradientCode::CyclicRepetition(n, s).value();
  std::vector<int> fin;
  for (int w = s; w < n; ++w) fin.push_back(w);
  for (auto _ : state) benchmark::DoNotOptimize(code.DecodingVector(fin));
}

// Full gradient decode (decoding vector + weighted sum) for dim-d gradients.
void BM_GradientDecode(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0)), s = static_cast<int>(state.range(1));
  const int dim = static_cast<int>(state.range(2));
  auto code = tc::GradientCode::CyclicRepetition(n, s).value();
  std::vector<std::pair<int, std::vector<double>>> coded;
  for (int w = s; w < n; ++w) {
    tc::Matrix g = RandomMatrix(1, dim, 10 + w);
    coded.emplace_back(w, g.data());
  }
  for (auto _ : state) benchmark::DoNotOptimize(code.Decode(coded));
}

void BM_GradientCyclicConstruct(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0)), s = static_cast<int>(state.range(1));
  for (auto _ : state) benchmark::DoNotOptimize(tc::GradientCode::CyclicRepetition(n, s));
}

}  // namespace

BENCHMARK(BM_MdsEncode)->Args({5, 3, 3000})->Args({12, 8, 8000})->Args({64, 48, 48000});
BENCHMARK(BM_MdsDecodeWorst)
    ->Args({5, 3, 3000, 1})
    ->Args({12, 8, 8000, 1})
    ->Args({12, 8, 8000, 16})
    ->Args({64, 48, 48000, 1});
BENCHMARK(BM_GradientDecodingVector)->Args({16, 2})->Args({64, 4})->Args({128, 4});
BENCHMARK(BM_GradientDecode)->Args({16, 2, 100000})->Args({64, 4, 100000});
BENCHMARK(BM_GradientCyclicConstruct)->Args({64, 4});

BENCHMARK_MAIN();
