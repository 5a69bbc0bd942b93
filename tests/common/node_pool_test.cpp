#include "tailcut/common/node_pool.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace tailcut {

TEST_CASE("NodePool reuses a freed block of the same size and serves any size") {
  NodePool pool;
  void* a = pool.allocate(40);
  void* b = pool.allocate(40);
  CHECK(a != b);
  CHECK(reinterpret_cast<uintptr_t>(a) % alignof(std::max_align_t) == 0);
  pool.deallocate(a, 40);
  CHECK(pool.allocate(40) == a);    // the free list's block
  void* big = pool.allocate(4096);  // beyond the pooled sizes: the heap
  pool.deallocate(big, 4096);
  void* aligned = pool.allocate(64, 64);
  CHECK(reinterpret_cast<uintptr_t>(aligned) % 64 == 0);
  pool.deallocate(aligned, 64, 64);
  std::vector<void*> many;  // more than one chunk
  for (int i = 0; i < 10000; ++i) many.push_back(pool.allocate(48));
  for (void* p : many) pool.deallocate(p, 48);
  pool.deallocate(b, 40);
}

// The core's attempt table moved onto the pool and policies walk it: the
// walk's order must be the one a plain std::unordered_map gives after the
// same inserts and erases.
TEST_CASE("an unordered_map on a NodePool walks in the order of one on the heap") {
  NodePool pool;
  std::pmr::unordered_map<uint64_t, std::string> pooled(&pool);
  std::unordered_map<uint64_t, std::string> plain;
  std::mt19937_64 rng(7);
  for (int op = 0; op < 50000; ++op) {
    const uint64_t k = 1 + rng() % 5000;
    if (rng() % 3 == 0) {
      pooled.erase(k);
      plain.erase(k);
    } else {
      pooled.try_emplace(k, std::to_string(k));
      plain.try_emplace(k, std::to_string(k));
    }
  }
  std::vector<uint64_t> a, b;
  for (auto& [k, v] : pooled) a.push_back(k);
  for (auto& [k, v] : plain) b.push_back(k);
  CHECK(a == b);
}

}  // namespace tailcut
