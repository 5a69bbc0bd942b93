#include "first_attempts.h"

#include <catch2/catch.hpp>

#include <map>
#include <random>

namespace tailcut::policy_util {

// The selector's table of first attempts replaced an std::map of (job,
// task) -> attempt: same answers and the same eviction order (the
// smallest key first), over random launches, commits and evictions across
// several jobs, tasks launched out of order, and jobs that go empty and
// come back.
TEST_CASE("FirstAttempts holds what an ordered map of (job, task) holds") {
  std::mt19937_64 rng(41);
  FirstAttempts f;
  std::map<std::pair<JobId, TaskIndex>, AttemptId> ref;
  AttemptId next = 1;
  for (int op = 0; op < 300000; ++op) {
    const JobId job = 1 + rng() % 6;
    const TaskIndex task = static_cast<TaskIndex>(rng() % 50);
    switch (rng() % 4) {
      case 0:
      case 1: {
        if (ref.size() >= 40 && rng() % 2) {  // at the cap: the oldest key goes first
          f.EraseSmallest();
          ref.erase(ref.begin());
        }
        const AttemptId a = next++;
        f.Add(job, task, a);
        ref.try_emplace({job, task}, a);
        break;
      }
      case 2:
        f.Erase(job, task);
        ref.erase({job, task});
        break;
      case 3: {
        auto it = ref.find({job, task});
        REQUIRE(f.Find(job, task) == (it == ref.end() ? 0 : it->second));
        break;
      }
    }
    REQUIRE(f.size() == ref.size());
  }
  while (!ref.empty()) {  // drained in key order
    auto [key, a] = *ref.begin();
    REQUIRE(f.Find(key.first, key.second) == a);
    f.EraseSmallest();
    ref.erase(ref.begin());
    REQUIRE(f.Find(key.first, key.second) == 0);
  }
  CHECK(f.size() == 0);
  f.EraseSmallest();  // empty: nothing
  CHECK(f.size() == 0);
}

}  // namespace tailcut::policy_util
