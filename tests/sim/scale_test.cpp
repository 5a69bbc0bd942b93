// The same defaults at every task scale (docs/benchmarks/tail.md, "The same
// defaults at every task scale"), and the references the tables read each
// policy against: the online reference and the bound capped at none.
#include <cmath>
#include <string>

#include "sim_helpers.h"
#include "tailcut/policies/registry.h"
#include "tailcut/sim/command.h"
#include "tailcut/sim/online_reference.h"

namespace tailcut::sim {
namespace {

using testing::ScenarioFile;

SimResult RunEntry(const Scenario& sc, const std::string& entry) {
  auto r = RunPolicy(sc, entry, sc.seed);
  INFO(entry);
  REQUIRE(r.ok());
  REQUIRE(r->unfinished == 0);
  return *r;
}

TEST_CASE("every policy cuts the tail by the same share at 20 ms as at 2 s tasks") {
  // The same shape x100 in time (network delays aside, 0.15 ms each way):
  // a threshold that assumed a task scale (the 0.1 s min_runtime_s, a 0.1 s
  // policy interval) cut the 20 ms tail less than the 2 s one.
  for (const char* slots : {"1slot", "2slot"}) {
    Scenario small = ScenarioFile(std::string("stragglers_20ms_") + slots + ".toml");
    Scenario big = ScenarioFile(std::string("stragglers_2s_") + slots + ".toml");
    small.workload.jobs = big.workload.jobs = 200;
    const double none_small = RunEntry(small, "none").p99, none_big = RunEntry(big, "none").p99;
    for (const char* p : {"spark", "late", "hedge", "default"}) {
      double a = RunEntry(small, p).p99 / none_small, b = RunEntry(big, p).p99 / none_big;
      INFO(slots << " " << p << ": p99 / none's " << a << " at 20 ms, " << b << " at 2 s");
      CHECK(std::abs(a - b) <= 0.05 * b);
      CHECK(a < 0.9);  // and each does cut it
    }
  }
}

TEST_CASE("the default chain leaves a healthy shape as none runs it and cuts a straggler tail") {
  for (const char* scale : {"2ms", "20ms", "2s"}) {
    Scenario healthy = ScenarioFile(std::string("healthy_") + scale + "_1slot.toml");
    Scenario strag = ScenarioFile(std::string("stragglers_") + scale + "_1slot.toml");
    healthy.workload.jobs = strag.workload.jobs = 200;
    SimResult hn = RunEntry(healthy, "none"), hd = RunEntry(healthy, "default");
    SimResult sn = RunEntry(strag, "none"), sd = RunEntry(strag, "default");
    INFO(scale << ": healthy p50 " << hn.p50 << " / " << hd.p50 << ", p99 " << hn.p99 << " / " << hd.p99
               << "; stragglers p50 " << sn.p50 << " / " << sd.p50 << ", p99 " << sn.p99 << " / " << sd.p99);
    CHECK(hd.p50 == Approx(hn.p50).epsilon(0.03));
    // No harm to the tail: at most 3% above none's. Since issue #25 an
    // attempt waiting in its executor's queue is not judged, and at 2 ms
    // default's healthy p99 comes out ~5% below none's.
    CHECK(hd.p99 <= 1.03 * hn.p99);
    CHECK(sd.p50 <= sn.p50);
    CHECK(sd.p99 <= 0.6 * sn.p99);
  }
}

TEST_CASE("the online reference is the best single threshold and never above none") {
  Scenario strag = ScenarioFile("stragglers_20ms_1slot.toml");
  Scenario healthy = ScenarioFile("healthy_20ms_1slot.toml");
  strag.workload.jobs = healthy.workload.jobs = 200;
  SimResult none = RunEntry(strag, "none");
  auto on = OnlineReference(strag, strag.seed, none);
  REQUIRE(on.ok());
  CHECK(on->result.policy == "online");
  CHECK(on->ratio > 0);  // acting pays on stragglers
  CHECK(on->result.p99 < none.p99);
  CHECK(on->result.copies > 0);
  SimResult hnone = RunEntry(healthy, "none");
  auto hon = OnlineReference(healthy, healthy.seed, hnone);
  REQUIRE(hon.ok());
  CHECK(hon->result.p99 <= hnone.p99);
  Scenario trace = strag;
  trace.workload.arrival = WorkloadModel::Arrival::kTrace;
  CHECK_FALSE(OnlineReference(trace, 1, none).ok());
}

TEST_CASE("the bound's quantiles are capped at none's") {
  SimResult b, none;
  b.mean = 1;
  b.p50 = 0.5;
  b.p90 = 2;
  b.p99 = 3;
  b.p999 = 4;
  none.mean = 2;
  none.p50 = 0.4;
  none.p90 = 2.5;
  none.p99 = 2;
  none.p999 = 5;
  CapAtNone(&b, none);
  CHECK(b.mean == 1);
  CHECK(b.p50 == 0.4);
  CHECK(b.p90 == 2);
  CHECK(b.p99 == 2);
  CHECK(b.p999 == 4);
}

}  // namespace
}  // namespace tailcut::sim
