// Per-event costs that must not grow with the fleet (docs/SCALE.md):
// counted, not timed. A registration asks the policies about the new
// executor, and time-only advice is swept over the fleet once a second, so
// registering N executors costs O(N) policy calls in all, whatever the
// policy interval; ListExecutors' pages cover the fleet once.
#include <catch2/catch.hpp>
#include <set>

#include "core_harness.h"

namespace tailcut::testing {
namespace {

// Counts the placement advice the core asks for, and which executors it
// asked about.
class CountingPolicy : public MitigationPolicy {
 public:
  std::string_view name() const override { return "counting"; }
  bool AvoidExecutor(const ClusterView&, ExecutorId e) const override {
    ++asked;
    seen.insert(e);
    return false;
  }
  mutable uint64_t asked = 0;
  mutable std::set<ExecutorId> seen;
};

struct Fleet {
  CountingPolicy* policy;
  CoreHarness h;
  static PolicyChain Chain(CountingPolicy** out) {
    auto p = std::make_unique<CountingPolicy>();
    *out = p.get();
    PolicyChain c;
    c.push_back(std::move(p));
    return c;
  }
  // OnTick at every 1 ms tick: what tiny tasks bring the policy interval to.
  static CoreOptions Options() {
    CoreOptions o;
    o.policy_interval_s = 0.001;
    o.policy_interval_min_s = 0.001;
    o.lost_after_s = 0;
    return o;
  }
  Fleet() : policy(nullptr), h(Options(), Chain(&policy)) {}
};

}  // namespace

TEST_CASE("registering a fleet costs the policies O(1) advice calls per executor, not O(fleet)") {
  Fleet f;
  constexpr uint64_t kExecutors = 3000;
  for (uint64_t i = 0; i < kExecutors; ++i) {
    f.h.Exec(4);
    f.h.Pass(0.001);  // an OnTick after every registration
  }
  // One call as each joins, plus the sweep: the fleet once a second (3 s
  // here, never more than 3,000 executors). Asking the whole fleet at every
  // OnTick, as before, was ~4.5 million calls.
  CHECK(f.policy->asked >= kExecutors);
  CHECK(f.policy->asked <= kExecutors + 3 * kExecutors + kExecutors / 10);
}

TEST_CASE("advice that changes with time alone reaches every executor within a second of OnTicks") {
  Fleet f;
  for (int i = 0; i < 500; ++i) f.h.Exec(1);
  f.policy->seen.clear();
  for (int i = 0; i < 1000; ++i) f.h.Pass(0.001);
  CHECK(f.policy->seen.size() == 500);
}

TEST_CASE("executor pages cover the fleet once, in id order") {
  CoreHarness h;
  for (int i = 0; i < 25; ++i) h.Exec(1);
  CHECK(h.core.ExecutorCount() == 25);
  std::vector<ExecutorId> ids;
  ExecutorId after = 0;
  for (int page = 0; page < 10; ++page) {
    auto p = h.core.Executors(after, 10);
    CHECK(p.size() <= 10);
    if (p.empty()) break;
    for (auto& e : p) ids.push_back(e.id);
    after = p.back().id;
  }
  REQUIRE(ids.size() == 25);
  for (size_t i = 1; i < ids.size(); ++i) CHECK(ids[i - 1] < ids[i]);
  CHECK(h.core.Executors(ids.back(), 10).empty());
}

}  // namespace tailcut::testing
