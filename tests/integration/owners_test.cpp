// Issue 26 live: two owners on one fleet of the real daemons. The big owner
// ("other") keeps 100,000 tasks queued; the small owner ("client") submits
// 16-task jobs one after another.
//
// The ctest case checks what holds by construction, whatever the machine's
// load: the small owner's tasks take the next freed slots (a wait of about
// one big task, where first come first served would queue them behind
// 100,000), with speculation on as off. The speed target (its p50 and p99
// within 1.5x of alone) is a benchmark, the hidden case "[bench]" run by
// hand (docs/benchmarks/policies.md, "Two owners"): timed checks in the suite would
// fail on a loaded or sanitized build without anything being wrong.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "daemon_cluster.h"

using namespace tailcut;

namespace {

struct Figures {
  std::vector<double> latency, wait;  // per job: latency; per task: start - submit
  double Q(const std::vector<double>& v, double q) const {
    std::vector<double> s = v;
    std::sort(s.begin(), s.end());
    size_t i = static_cast<size_t>(std::ceil(q * s.size()));
    return s[std::min(s.size() - 1, i == 0 ? 0 : i - 1)];  // nearest rank
  }
};

// `n` 16-task jobs of ~100 ms sleeps (lognormal, sigma 0.3), one after
// another, timed on the scheduler's clock.
Figures SmallJobs(Client& client, int n) {
  Figures f;
  for (int i = 0; i < n; ++i) {
    auto id = client.Submit(FanoutJob("sleep", "ms=100 sigma=0.3", 16));
    REQUIRE(id.ok());
    WaitOptions w;
    w.timeout_s = 60;
    w.progress_interval_s = 0.01;
    auto st = client.Wait(*id, w);
    REQUIRE(st.ok());
    REQUIRE(st->state() == wire::JOB_SUCCEEDED);
    f.latency.push_back(st->finished_at_s() - st->submitted_at_s());
    auto trace = client.Trace(*id);
    REQUIRE(trace.ok());
    for (const wire::TraceAttempt& a : trace->attempts()) f.wait.push_back(a.start_s() - st->submitted_at_s());
  }
  return f;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one;
}

struct TwoOwners {
  Figures alone, shared;
};

// Small jobs alone, then behind one 100,000-task job of the big owner, on
// 4 executors x 16 slots (a 16-task job is a quarter of the fleet, under
// the small owner's half), with `policy` for both owners.
TwoOwners RunTwoOwners(const char* policy, int jobs) {
  testing::DaemonClusterOptions o;
  o.executors = 4;
  o.slots = 16;
  o.scheduler_flags = {"--policy", policy};
  testing::DaemonCluster c(o);
  Client big(c.cluster->client_options("other"));
  TwoOwners r;
  r.alone = SmallJobs(*c.client, jobs);
  // Its tasks vary (sigma 0.5) as real ones do, so its slots do not all
  // free at the same instants.
  auto id = big.Submit(FanoutJob("sleep", "ms=100 sigma=0.5", 100000));
  REQUIRE(id.ok());
  for (int i = 0; i < 500; ++i) {  // until the big job fills the fleet
    auto st = big.GetStatus(*id);
    REQUIRE(st.ok());
    if (st->running() >= 64) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // its first wave, started at once, spreads out
  r.shared = SmallJobs(*c.client, jobs);
  auto st = big.GetStatus(*id);
  REQUIRE(st.ok());
  CHECK(st->tasks() - st->committed() > 90000);  // it stayed queued all along
  CHECK(big.Cancel(*id).ok());
  std::printf(
      "policy %s (load average %s): small owner alone p50 %.3f s p99 %.3f s, wait p99 %.3f s; "
      "with the big owner p50 %.3f s p99 %.3f s, wait p50 %.3f s p99 %.3f s\n",
      policy, LoadAverage().c_str(), r.alone.Q(r.alone.latency, 0.5), r.alone.Q(r.alone.latency, 0.99),
      r.alone.Q(r.alone.wait, 0.99), r.shared.Q(r.shared.latency, 0.5), r.shared.Q(r.shared.latency, 0.99),
      r.shared.Q(r.shared.wait, 0.5), r.shared.Q(r.shared.wait, 0.99));
  return r;
}

}  // namespace

TEST_CASE("two owners: behind 100,000 queued tasks, the small owner's tasks take the next freed slots") {
  for (const char* policy : {"none", "spark"}) {
    TwoOwners r = RunTwoOwners(policy, 5);
    // 64 slots each freeing about every 100 ms: 16 of them free within tens
    // of milliseconds. 2 s is 20 big tasks' worth of slack for a loaded or
    // sanitized build, and 1/75 of the 150 s a first-come-first-served
    // queue would make them wait.
    CHECK(r.shared.Q(r.shared.wait, 0.99) <= 2.0);
  }
}

// The benchmark (issue 26's target), run by hand:
//   build/tests/integration/integration_owners_test "[bench]"
TEST_CASE("two owners: the small owner's jobs stay within 1.5x of alone (benchmark)", "[.][bench]") {
  double wait_p99[3] = {0, 0, 0};
  int k = 0;
  for (const char* policy : {"none", "spark", "default"}) {
    TwoOwners r = RunTwoOwners(policy, 30);
    CHECK(r.shared.Q(r.shared.latency, 0.5) <= 1.5 * r.alone.Q(r.alone.latency, 0.5));
    CHECK(r.shared.Q(r.shared.latency, 0.99) <= 1.5 * r.alone.Q(r.alone.latency, 0.99));
    wait_p99[k++] = r.shared.Q(r.shared.wait, 0.99);
  }
  // Speculation for the big owner takes no slot the small owner's tasks
  // wait for: its queue wait is the same (within one 100 ms task).
  CHECK(std::abs(wait_p99[1] - wait_p99[0]) <= 0.1);
  CHECK(std::abs(wait_p99[2] - wait_p99[0]) <= 0.1);
}
