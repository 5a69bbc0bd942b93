#include "tailcut/common/id_map.h"

#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tailcut {

TEST_CASE("IdMap finds, inserts and erases as a hash map does") {
  IdMap<std::string> m;
  CHECK(m.empty());
  CHECK(m.Find(5) == nullptr);
  CHECK_FALSE(m.Erase(5));
  auto [v, fresh] = m.TryEmplace(5);
  CHECK(fresh);
  CHECK(v->empty());
  *v = "five";
  CHECK_FALSE(m.TryEmplace(5).second);
  CHECK(*m.Find(5) == "five");
  m[0] = "zero";  // not a valid id, but kept all the same
  CHECK(m.size() == 2);
  CHECK(*m.Find(0) == "zero");
  CHECK(m.Erase(0));
  CHECK(m.Find(0) == nullptr);
  CHECK(m.Erase(5));
  CHECK(m.empty());
  CHECK(m.TryEmplace(5).first->empty());  // a fresh value after erasing
}

// Against std::unordered_map, with keys that collide (multiples of a power
// of two, consecutive ids) and long runs of inserts and erases, so that
// the backward shift on erase is exercised across the table's wrap.
TEST_CASE("IdMap agrees with std::unordered_map over random operations") {
  for (uint64_t stride : {uint64_t{1}, uint64_t{1} << 20, uint64_t{7}}) {
    std::mt19937_64 rng(stride);
    IdMap<uint64_t> m;
    std::unordered_map<uint64_t, uint64_t> ref;
    for (int op = 0; op < 200000; ++op) {
      const uint64_t k = 1 + stride * (rng() % 3000);
      switch (rng() % 3) {
        case 0: {
          auto [v, fresh] = m.TryEmplace(k);
          auto [it, ref_fresh] = ref.try_emplace(k, 0);
          REQUIRE(fresh == ref_fresh);
          *v += op;
          it->second += op;
          break;
        }
        case 1: REQUIRE(m.Erase(k) == (ref.erase(k) > 0)); break;
        case 2: {
          const uint64_t* v = m.Find(k);
          auto it = ref.find(k);
          REQUIRE((v != nullptr) == (it != ref.end()));
          if (v) REQUIRE(*v == it->second);
          break;
        }
      }
      REQUIRE(m.size() == ref.size());
    }
    for (auto& [k, v] : ref) REQUIRE(*m.Find(k) == v);
  }
}

TEST_CASE("IdSet inserts once and forgets") {
  IdSet s;
  CHECK(s.Insert(3));
  CHECK_FALSE(s.Insert(3));
  CHECK(s.Contains(3));
  CHECK(s.Erase(3));
  CHECK_FALSE(s.Erase(3));
  CHECK_FALSE(s.Contains(3));
  CHECK(s.empty());
  for (uint64_t id : {9, 2, 40, 7}) s.Insert(id);
  s.Erase(40);
  CHECK(s.Sorted() == std::vector<uint64_t>{2, 7, 9});
  uint64_t sum = 0;
  s.ForEach([&](uint64_t id) { sum += id; });
  CHECK(sum == 18);
}

}  // namespace tailcut
