#include "tailcut/common/executor_map.h"

#include <catch2/catch.hpp>

#include <map>

namespace tailcut {

TEST_CASE("ExecutorMap keeps records by id, dense or not") {
  ExecutorMap<int> m;
  CHECK(m.empty());
  CHECK(m.Find(3) == nullptr);
  m[3] = 30;
  m[1] = 10;
  const ExecutorId far = ExecutorMap<int>::kDenseIds + 7;  // beyond the dense range
  m[far] = 70;
  CHECK(m.size() == 3);
  REQUIRE(m.Find(3) != nullptr);
  CHECK(*m.Find(3) == 30);
  CHECK(*m.Find(far) == 70);
  CHECK(m.Find(2) == nullptr);  // inside the vector, never set
  std::map<ExecutorId, int> seen;
  m.ForEach([&](ExecutorId e, int& v) { seen[e] = v; });
  CHECK(seen == std::map<ExecutorId, int>{{1, 10}, {3, 30}, {far, 70}});
  m.Erase(3);
  m.Erase(far);
  m.Erase(99);  // unknown: nothing
  CHECK(m.size() == 1);
  CHECK(m.Find(3) == nullptr);
  CHECK(m.Find(far) == nullptr);
  CHECK(m[3] == 0);  // a fresh record after erasing
}

}  // namespace tailcut
