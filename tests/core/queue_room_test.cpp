// QueueRoom (queue_room.h): Next returns what a walk of every executor in
// id order from after the cursor would, under random keys, removals and
// rebuilds; and it visits only executors whose key qualifies.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <random>

#include "queue_room.h"

using namespace tailcut;
using tailcut::core::QueueRoom;

namespace {

// The reference: every executor in id order after `after`, round to it.
ExecutorId Walk(const std::map<ExecutorId, uint32_t>& keys, ExecutorId after, uint32_t max_key,
                const std::function<bool(ExecutorId)>& fits) {
  if (keys.empty()) return 0;
  auto it = keys.upper_bound(after);
  for (size_t i = 0; i < keys.size(); ++i, ++it) {
    if (it == keys.end()) it = keys.begin();
    if (it->second <= max_key && fits(it->first)) return it->first;
  }
  return 0;
}

}  // namespace

TEST_CASE("QueueRoom::Next finds what a walk of the fleet finds", "[queue_room]") {
  std::mt19937_64 rng(7);
  QueueRoom room;
  std::map<ExecutorId, uint32_t> keys;
  ExecutorId next_id = 1;
  std::uniform_int_distribution<uint32_t> key(0, 6);
  for (int step = 0; step < 20000; ++step) {
    const int op = static_cast<int>(rng() % 10);
    if (op == 0 || keys.size() < 4) {
      next_id += 1 + rng() % 3;  // ids increase, with gaps
      const uint32_t k = rng() % 8 == 0 ? QueueRoom::kNever : key(rng);
      room.Add(next_id, k);
      keys[next_id] = k;
    } else if (op == 1) {
      auto it = keys.lower_bound(1 + rng() % next_id);
      if (it == keys.end()) continue;
      room.Remove(it->first);
      keys.erase(it);
    } else if (op < 6) {
      auto it = keys.lower_bound(1 + rng() % next_id);
      if (it == keys.end()) continue;
      it->second = key(rng);
      room.Set(it->first, it->second);
    } else {
      const ExecutorId after = rng() % (next_id + 2);
      const uint32_t max_key = key(rng);
      const uint64_t salt = rng();
      auto fits = [&](ExecutorId id) { return (id ^ salt) % 3 != 0; };  // the caller's own test
      size_t visited = 0;
      const ExecutorId got = room.Next(after, max_key, [&](ExecutorId id) {
        ++visited;
        CHECK(keys.at(id) <= max_key);  // only qualifying, present executors are visited
        return fits(id);
      });
      REQUIRE(got == Walk(keys, after, max_key, fits));
    }
    REQUIRE(room.size() == keys.size());
  }
}

TEST_CASE("QueueRoom with every key too high visits nothing", "[queue_room]") {
  QueueRoom room;
  for (ExecutorId id = 1; id <= 10000; ++id) room.Add(id, 3);
  size_t visited = 0;
  CHECK(room.Next(5000, 2, [&](ExecutorId) { return ++visited, true; }) == 0);
  CHECK(visited == 0);
  room.Set(1234, 2);
  CHECK(room.Next(5000, 2, [&](ExecutorId) { return ++visited, true; }) == 1234);  // wraps round
  CHECK(visited == 1);
  room.Remove(1234);
  CHECK(room.Next(0, 2, [](ExecutorId) { return true; }) == 0);
  CHECK(room.Next(0, QueueRoom::kNever - 1, [](ExecutorId) { return true; }) == 1);
}
