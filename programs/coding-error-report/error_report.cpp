// coding-error-report: double-precision decode error and condition numbers
// of the coding library's codes, printed as Markdown tables (pasted into
// docs/CODING.md). Deterministic: fixed seeds throughout.
//
//   build/bin/coding-error-report [samples_per_config]   (default 400)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <utility>
#include <vector>

#include "tailcut/cli/command_line.h"
#include "tailcut/coding/gradient_code.h"
#include "tailcut/coding/matrix.h"
#include "tailcut/coding/mds_code.h"

namespace tc = tailcut::coding;

namespace {

double Binomial(int n, int k) {
  double r = 1.0;
  for (int i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return r;
}

// All k-subsets of [0,n) when there are at most `limit`, else `limit`
// random ones (seeded) plus the adversarial "first / last n-k data blocks
// lost" patterns.
std::vector<std::vector<int>> Subsets(int n, int k, int limit, std::mt19937_64& rng) {
  std::vector<std::vector<int>> out;
  if (Binomial(n, k) <= limit) {
    std::vector<int> c(static_cast<std::size_t>(k));
    for (int i = 0; i < k; ++i) c[i] = i;
    while (true) {
      out.push_back(c);
      int i = k - 1;
      while (i >= 0 && c[i] == n - k + i) --i;
      if (i < 0) break;
      ++c[i];
      for (int j = i + 1; j < k; ++j) c[j] = c[j - 1] + 1;
    }
    return out;
  }
  std::vector<int> all(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) all[i] = i;
  for (int t = 0; t < limit; ++t) {
    std::shuffle(all.begin(), all.end(), rng);
    out.emplace_back(all.begin(), all.begin() + k);
  }
  return out;
}

tc::Matrix RandomMatrix(int r, int c, std::mt19937_64& rng) {
  std::normal_distribution<double> nd;
  tc::Matrix m(r, c);
  for (double& v : m.data()) v = nd(rng);
  return m;
}

const char* Name(tc::MdsParity p) {
  switch (p) {
    case tc::MdsParity::kGaussian: return "gaussian";
    case tc::MdsParity::kCauchy: return "cauchy";
    case tc::MdsParity::kChebyshevVandermonde: return "cheb-vandermonde";
  }
  return "?";
}

void MdsReport(int samples) {
  std::printf("### MDS coded matmul: A (k*8 x 16) times X (16 x 4), relative Frobenius error\n\n");
  std::printf("| n | k | parity | subsets | max cond2 | median cond2 | max rel err |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  const std::vector<std::pair<int, int>> sizes = {{3, 2},   {5, 3},   {8, 4},   {12, 8},  {16, 12},
                                                  {16, 8},  {24, 16}, {32, 24}, {48, 32}, {64, 48}};
  for (auto [n, k] : sizes) {
    for (auto kind : {tc::MdsParity::kGaussian, tc::MdsParity::kCauchy,
                      tc::MdsParity::kChebyshevVandermonde}) {
      std::mt19937_64 rng(1234 + 97 * n + k);
      auto code = tc::MdsCode::Systematic(n, k, kind);
      if (!code.ok()) continue;
      const int rows = k * 8 - 3;  // exercise the zero padding
      tc::Matrix a = RandomMatrix(rows, 16, rng);
      tc::Matrix x = RandomMatrix(16, 4, rng);
      tc::Matrix ax = a.Multiply(x).value();
      std::vector<tc::Matrix> enc = code->Encode(a);
      std::vector<tc::Matrix> prod;
      for (const auto& e : enc) prod.push_back(e.Multiply(x).value());
      auto subsets = Subsets(n, k, samples, rng);
      // Adversarial: all parity blocks used, first / last data blocks lost.
      if (static_cast<double>(subsets.size()) < Binomial(n, k)) {
        std::vector<int> lo, hi;
        for (int i = 0; i < n; ++i) {
          if (i >= n - k) lo.push_back(i);  // loses data 0..n-k-1
          if (i < k - (n - k) || i >= k) hi.push_back(i);  // loses the last n-k data
        }
        subsets.push_back(lo);
        subsets.push_back(hi);
      }
      double max_cond = 1.0, max_err = 0.0;
      std::vector<double> conds;
      for (const auto& s : subsets) {
        std::vector<std::pair<int, tc::Matrix>> res;
        for (int i : s) res.emplace_back(i, prod[i]);
        auto dec = code->Decode(res, rows);
        const double err = dec.ok() ? tc::Matrix::DiffFrobenius(*dec, ax) / ax.NormFrobenius()
                                    : INFINITY;
        const double cond = code->DecodeConditionNumber(s).value();
        conds.push_back(cond);
        max_cond = std::max(max_cond, cond);
        max_err = std::max(max_err, err);
      }
      std::sort(conds.begin(), conds.end());
      std::printf("| %d | %d | %s | %zu | %.3g | %.3g | %.2e |\n", n, k, Name(kind), subsets.size(),
                  max_cond, conds[conds.size() / 2], max_err);
    }
  }
  std::printf("\n");
}

void GradientReport(int samples) {
  std::printf("### Gradient coding: %d straggler sets per row (exhaustive when fewer exist), "
              "partial gradients of dimension 32\n\n", samples);
  std::printf("| scheme | n | s | sets | max cond2(B_F) | median cond2 | max abs(a) | "
              "max rel err fp64 | max rel err fp32 |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  const int dim = 32;
  struct Cfg { bool cyclic; int n; int s; };
  std::vector<Cfg> cfgs;
  for (int n : {8, 12, 16, 24, 32, 48, 64})
    for (int s : {1, 2, 4}) cfgs.push_back({true, n, s});
  cfgs.push_back({false, 64, 1});
  cfgs.push_back({false, 64, 3});
  for (const Cfg& cfg : cfgs) {
    const int n = cfg.n, s = cfg.s;
    auto code = cfg.cyclic ? tc::GradientCode::CyclicRepetition(n, s)
                           : tc::GradientCode::FractionalRepetition(n, s);
    if (!code.ok()) {
      std::printf("| %s | %d | %d | construction failed: %s |\n", cfg.cyclic ? "cyclic" : "fractional",
                  n, s, code.status().ToString().c_str());
      continue;
    }
    std::mt19937_64 rng(4321 + 31 * n + s);
    // Partial gradients and the exact sum (long double accumulation).
    std::vector<std::vector<double>> g(static_cast<std::size_t>(n));
    std::normal_distribution<double> nd;
    for (auto& v : g) {
      v.resize(dim);
      for (double& e : v) e = nd(rng);
    }
    std::vector<double> truth(dim);
    for (int e = 0; e < dim; ++e) {
      long double acc = 0;
      for (int j = 0; j < n; ++j) acc += g[j][e];
      truth[e] = static_cast<double>(acc);
    }
    double tnorm = 0;
    for (double v : truth) tnorm += v * v;
    tnorm = std::sqrt(tnorm);
    std::vector<std::vector<double>> coded(static_cast<std::size_t>(n));
    for (int w = 0; w < n; ++w) {
      std::vector<std::vector<double>> parts;
      for (int p : code->PartitionsOf(w)) parts.push_back(g[p]);
      coded[w] = code->Combine(w, parts).value();
    }
    auto straggler_sets = Subsets(n, s, samples, rng);
    double max_cond = 1, max_a = 0, max_err = 0, max_err32 = 0;
    std::vector<double> conds;
    for (const auto& st : straggler_sets) {
      std::vector<bool> slow(static_cast<std::size_t>(n), false);
      for (int w : st) slow[w] = true;
      std::vector<int> fin;
      for (int w = 0; w < n; ++w)
        if (!slow[w]) fin.push_back(w);
      const double cond = tc::ConditionNumber2(code->encoding().SelectRows(fin));
      conds.push_back(cond);
      max_cond = std::max(max_cond, cond);
      auto a = code->DecodingVector(fin);
      if (!a.ok()) {
        max_err = max_err32 = INFINITY;
        continue;
      }
      std::vector<double> dec(dim, 0.0);
      std::vector<float> dec32(dim, 0.0f);
      for (int w : fin) {
        max_a = std::max(max_a, std::abs((*a)[w]));
        // fp32 pipeline: the worker's coded gradient is computed in float
        // (coefficients and partials rounded), decoding runs in float.
        std::vector<float> c32(dim, 0.0f);
        for (int p : code->PartitionsOf(w))
          for (int e = 0; e < dim; ++e)
            c32[e] += static_cast<float>(code->encoding()(w, p)) * static_cast<float>(g[p][e]);
        for (int e = 0; e < dim; ++e) {
          dec[e] += (*a)[w] * coded[w][e];
          dec32[e] += static_cast<float>((*a)[w]) * c32[e];
        }
      }
      double d = 0, d32 = 0;
      for (int e = 0; e < dim; ++e) {
        d += (dec[e] - truth[e]) * (dec[e] - truth[e]);
        d32 += (dec32[e] - truth[e]) * (dec32[e] - truth[e]);
      }
      max_err = std::max(max_err, std::sqrt(d) / tnorm);
      max_err32 = std::max(max_err32, std::sqrt(d32) / tnorm);
    }
    std::sort(conds.begin(), conds.end());
    if (!cfg.cyclic) {
      // B_F has repeated rows (rank n/(s+1)), so cond2 is infinite and
      // meaningless: decoding just adds one 0/1-weighted survivor per group.
      std::printf("| fractional | %d | %d | %zu | n/a (0/1 decode) | n/a | %.3g | %.2e | %.2e |\n", n,
                  s, straggler_sets.size(), max_a, max_err, max_err32);
      continue;
    }
    std::printf("| cyclic | %d | %d | %zu | %.3g | %.3g | %.3g | %.2e | %.2e |\n", n, s,
                straggler_sets.size(), max_cond, conds[conds.size() / 2], max_a, max_err,
                max_err32);
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  tailcut::cli::Command c;
  c.name = "coding-error-report";
  c.description =
      "Decode error and condition numbers of the MDS and gradient codes over random straggler sets (the tables of "
      "docs/CODING.md).";
  c.positionals = {{"SAMPLES", "straggler sets drawn per code (default 400)", false}};
  c.run = [](const tailcut::cli::Args& a) {
    int samples = 400;
    if (!a.positional().empty()) {
      char* end = nullptr;
      long v = std::strtol(a.positional()[0].c_str(), &end, 10);
      if (*end != '\0' || v < 1 || v > 100000000) {
        std::fprintf(stderr, "coding-error-report: SAMPLES wants a whole number >= 1, got '%s'\n",
                     a.positional()[0].c_str());
        return tailcut::cli::kExitUsage;
      }
      samples = static_cast<int>(v);
    }
    MdsReport(samples);
    GradientReport(samples);
    return 0;
  };
  return tailcut::cli::RunProgram(c, argc, argv);
}
