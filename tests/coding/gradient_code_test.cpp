#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

#include "tailcut/coding/gradient_code.h"
#include "test_util.h"

using tailcut::Status;
using tailcut::coding::GradientCode;
using tailcut::coding::testing::ForEachSubset;

namespace {

using Vec = std::vector<double>;

double RelErr(const Vec& got, const Vec& want) {
  double d = 0, w = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    d += (got[i] - want[i]) * (got[i] - want[i]);
    w += want[i] * want[i];
  }
  return std::sqrt(d / w);
}

// Checks structure, then decodes for every straggler set of size <= s.
// Returns the max relative error; counts patterns in *patterns.
double CheckCode(const GradientCode& code, std::mt19937_64& rng, long* patterns) {
  const int n = code.n(), s = code.s(), dim = 5;
  // Support of row i is exactly PartitionsOf(i).
  for (int w = 0; w < n; ++w) {
    auto parts = code.PartitionsOf(w);
    REQUIRE(static_cast<int>(parts.size()) == s + 1);
    for (int j = 0; j < n; ++j) {
      const bool in = std::find(parts.begin(), parts.end(), j) != parts.end();
      if (!in) REQUIRE(code.encoding()(w, j) == 0.0);
    }
  }
  std::normal_distribution<double> nd(0.5, 1.0);
  std::vector<Vec> g(static_cast<std::size_t>(n), Vec(dim));
  for (auto& v : g)
    for (double& e : v) e = nd(rng);
  Vec truth(dim, 0.0);
  for (const auto& v : g)
    for (int e = 0; e < dim; ++e) truth[e] += v[e];
  std::vector<Vec> coded;
  for (int w = 0; w < n; ++w) {
    std::vector<Vec> partials;
    for (int p : code.PartitionsOf(w)) partials.push_back(g[p]);
    auto c = code.Combine(w, partials);
    REQUIRE(c.ok());
    coded.push_back(*c);
  }
  double worst = 0.0;
  for (int t = 0; t <= s; ++t) {
    ForEachSubset(n, t, [&](const std::vector<int>& stragglers) {
      std::vector<std::pair<int, Vec>> fin;
      std::vector<bool> slow(static_cast<std::size_t>(n), false);
      for (int w : stragglers) slow[w] = true;
      for (int w = n - 1; w >= 0; --w)  // reverse order: order must not matter
        if (!slow[w]) fin.emplace_back(w, coded[w]);
      auto dec = code.Decode(fin);
      ++*patterns;
      if (!dec.ok()) {
        FAIL_CHECK("n=" << n << " s=" << s << ": " << dec.status().ToString());
        worst = 1.0;
        return;
      }
      worst = std::max(worst, RelErr(*dec, truth));
    });
  }
  // One straggler too many: not enough survivors.
  std::vector<std::pair<int, Vec>> too_few;
  for (int w = s + 1; w < n; ++w) too_few.emplace_back(w, coded[w]);
  auto bad = code.Decode(too_few);
  CHECK(bad.status().code() == Status::Code::kInvalidArgument);
  return worst;
}

}  // namespace

TEST_CASE("GradientCode: construction errors", "[coding][gradient]") {
  CHECK(GradientCode::FractionalRepetition(6, 3).status().code() == Status::Code::kInvalidArgument);
  CHECK(GradientCode::FractionalRepetition(6, 6).status().code() == Status::Code::kInvalidArgument);
  CHECK(GradientCode::FractionalRepetition(0, 0).status().code() == Status::Code::kInvalidArgument);
  CHECK(GradientCode::FractionalRepetition(6, 2).ok());
  CHECK(GradientCode::CyclicRepetition(5, 5).status().code() == Status::Code::kInvalidArgument);
  CHECK(GradientCode::CyclicRepetition(5, -1).status().code() == Status::Code::kInvalidArgument);
  CHECK(GradientCode::CyclicRepetition(5, 4).ok());
}

TEST_CASE("GradientCode: partitions and encoding layout", "[coding][gradient]") {
  auto fr = GradientCode::FractionalRepetition(6, 2).value();
  CHECK(fr.PartitionsOf(4) == std::vector<int>{3, 4, 5});
  CHECK(fr.encoding()(4, 3) == 1.0);
  CHECK(fr.encoding()(4, 0) == 0.0);
  CHECK(fr.PartitionsOf(6).empty());
  auto cy = GradientCode::CyclicRepetition(5, 2).value();
  CHECK(cy.PartitionsOf(4) == std::vector<int>{4, 0, 1});
  CHECK(cy.encoding()(4, 4) == 1.0);
  CHECK(cy.encoding()(4, 2) == 0.0);
  CHECK(cy.kind() == GradientCode::Kind::kCyclicRepetition);
}

TEST_CASE("GradientCode: every straggler set of size <= s decodes (n = 2..12)", "[coding][gradient]") {
  double worst_fr = 0.0, worst_cy = 0.0;
  long patterns = 0;
  for (int n = 2; n <= 12; ++n) {
    for (int s = 0; s < n; ++s) {
      std::mt19937_64 rng(1000 * n + s);
      auto cy = GradientCode::CyclicRepetition(n, s);
      REQUIRE(cy.ok());
      const double e = CheckCode(*cy, rng, &patterns);
      INFO("cyclic n=" << n << " s=" << s);
      CHECK(e < 1e-9);
      worst_cy = std::max(worst_cy, e);
      if (n % (s + 1) == 0) {
        auto fr = GradientCode::FractionalRepetition(n, s);
        REQUIRE(fr.ok());
        const double ef = CheckCode(*fr, rng, &patterns);
        INFO("fractional n=" << n << " s=" << s);
        CHECK(ef < 1e-12);
        worst_fr = std::max(worst_fr, ef);
      }
    }
  }
  std::printf("Gradient coding n=2..12, all s: %ld straggler patterns; max rel error "
              "cyclic %.2e, fractional %.2e\n", patterns, worst_cy, worst_fr);
}

TEST_CASE("GradientCode: decoding vector satisfies a^T B = 1^T", "[coding][gradient]") {
  auto code = GradientCode::CyclicRepetition(10, 3).value();
  auto a = code.DecodingVector({9, 0, 2, 3, 5, 6, 7, 8});  // 8 >= n-s = 7 finished
  REQUIRE(a.ok());
  REQUIRE(a->size() == 10);
  CHECK((*a)[1] == 0.0);
  CHECK((*a)[4] == 0.0);
  for (int j = 0; j < 10; ++j) {
    double sum = 0.0;
    for (int i = 0; i < 10; ++i) sum += (*a)[i] * code.encoding()(i, j);
    CHECK(sum == Approx(1.0).epsilon(1e-10));
  }
  CHECK(code.DecodingVector({0, 1, 2, 3, 4, 5}).status().code() == Status::Code::kInvalidArgument);
  CHECK(code.DecodingVector({0, 1, 2, 3, 4, 5, 5}).status().code() == Status::Code::kInvalidArgument);
  CHECK(code.DecodingVector({0, 1, 2, 3, 4, 5, 10}).status().code() ==
        Status::Code::kInvalidArgument);
}

TEST_CASE("GradientCode: Combine and Decode input errors", "[coding][gradient]") {
  auto code = GradientCode::CyclicRepetition(4, 1).value();
  CHECK(code.Combine(4, {{1.0}, {2.0}}).status().code() == Status::Code::kInvalidArgument);
  CHECK(code.Combine(0, {{1.0}}).status().code() == Status::Code::kInvalidArgument);
  CHECK(code.Combine(0, {{1.0}, {2.0, 3.0}}).status().code() == Status::Code::kInvalidArgument);
  auto c = code.Combine(0, {{1.0, 2.0}, {3.0, 4.0}});
  REQUIRE(c.ok());
  CHECK((*c)[0] == Approx(1.0 + code.encoding()(0, 1) * 3.0));
  std::vector<std::pair<int, std::vector<double>>> mixed = {{0, {1.0}}, {1, {1.0}}, {2, {1.0, 2.0}}};
  CHECK(code.Decode(mixed).status().code() == Status::Code::kInvalidArgument);
}
