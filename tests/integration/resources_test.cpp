// End to end (issue 26, "Resources people ask for"): memory requests and
// multi-GPU tasks through the real scheduler and executor daemons. The
// executors declare their memory (`memory_mb`) and fake GPUs (`fake_gpus`,
// the test aid of docs/GPU.md), so the figures do not depend on the machine.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "daemon_cluster.h"
#include "tailcut/client/client.h"

using namespace tailcut;
using tailcut::testing::DaemonCluster;
using tailcut::testing::DaemonClusterOptions;
using tailcut::testing::SubmitAndWait;

namespace {

DaemonClusterOptions Executors(int n, int slots, std::vector<std::string> flags, bool shell = false) {
  DaemonClusterOptions o;
  o.executors = n;
  o.slots = slots;
  o.executor_flags.assign(static_cast<size_t>(n), flags);
  o.allow_shell = shell;
  return o;
}

// The trace's times are the scheduler's: one Report may bring an attempt's
// result and the next one's start, read a moment apart in either order. The
// tasks here run 300 ms, so only overlaps longer than this count.
constexpr double kMarginS = 0.1;

// Most attempts of `trace` that overlapped in time on one executor.
size_t MostAtOnce(const wire::JobTrace& trace, uint64_t executor) {
  std::vector<std::pair<double, int>> edges;  // +1 at a start, -1 at an end; ends first on ties
  for (const wire::TraceAttempt& a : trace.attempts())
    if (a.executor() == executor) {
      edges.emplace_back(a.start_s() + kMarginS / 2, +1);
      edges.emplace_back(a.end_s() - kMarginS / 2, -1);
    }
  std::sort(edges.begin(), edges.end());
  int now = 0, most = 0;
  for (auto& [t, d] : edges) most = std::max(most, now += d);
  return static_cast<size_t>(most);
}

}  // namespace

TEST_CASE("resources: a shell task over its memory request fails with the reason") {
  DaemonCluster c(Executors(1, 2, {"--set", "memory_mb=4096"}, true));
  wire::JobSpec job =
      FanoutJob("shell", "/usr/bin/python3 -c \"b = b'x' * (300 << 20); import time; time.sleep(30)\"", 1);
  job.mutable_template_()->mutable_demand()->set_memory_mb(64);
  job.set_max_attempts(1);
  auto st = SubmitAndWait(*c.client, job);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_FAILED);
  INFO(st->reason());
  CHECK(st->reason().find("exceeded its memory request of 64 MB") != std::string::npos);
  // Within its request the same kind of task runs.
  wire::JobSpec fits = FanoutJob("shell", "/usr/bin/python3 -c \"b = b'x' * (8 << 20); print(len(b))\"", 2);
  fits.mutable_template_()->mutable_demand()->set_memory_mb(512);
  fits.set_return_outputs(true);
  auto ok = SubmitAndWait(*c.client, fits);
  REQUIRE(ok.ok());
  CHECK(ok->state() == wire::JOB_SUCCEEDED);
}

TEST_CASE("resources: placement never puts more memory requests on an executor than it has") {
  // 8 slots but 1000 MiB each: two 400 MiB tasks at a time per executor.
  DaemonCluster c(Executors(2, 8, {"--set", "memory_mb=1000"}));
  wire::JobSpec job = FanoutJob("sleep", "ms=300", 12);
  job.mutable_template_()->mutable_demand()->set_memory_mb(400);
  auto st = SubmitAndWait(*c.client, job);
  REQUIRE(st.ok());
  REQUIRE(st->state() == wire::JOB_SUCCEEDED);
  auto trace = c.client->Trace(st->job_id());
  REQUIRE(trace.ok());
  REQUIRE(trace->attempts_size() == 12);
  std::set<uint64_t> executors;
  for (const auto& a : trace->attempts()) executors.insert(a.executor());
  for (uint64_t e : executors) CHECK(MostAtOnce(*trace, e) <= 2);
  // A task asking for more than any executor has is refused with the reason.
  wire::JobSpec huge = FanoutJob("sleep", "ms=1", 1);
  huge.mutable_template_()->mutable_demand()->set_memory_mb(2000);
  auto refused = c.client->Submit(huge);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("2000 MB of memory (the most any executor has: 1000 MB)") != std::string::npos);
  wire::JobSpec absurd = FanoutJob("sleep", "ms=1", 1);
  absurd.mutable_template_()->mutable_demand()->set_memory_mb((uint64_t{1} << 40) + 1);
  auto bad = c.client->Submit(absurd);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("demand.memory_mb") != std::string::npos);
}

TEST_CASE("resources: fake GPUs: a 2-gpu task sees two devices, concurrent 1-gpu tasks never share one") {
  DaemonCluster c(Executors(1, 4, {"--set", "fake_gpus=2"}, true));
  auto list = c.client->Executors();
  REQUIRE(list.ok());
  REQUIRE(list->size() == 1);
  CHECK((*list)[0].gpus() == 2);

  wire::JobSpec two = FanoutJob("shell", "echo $CUDA_VISIBLE_DEVICES", 1);
  two.mutable_template_()->mutable_demand()->set_gpus(2);
  two.set_return_outputs(true);
  auto st = SubmitAndWait(*c.client, two);
  REQUIRE(st.ok());
  REQUIRE(st->state() == wire::JOB_SUCCEEDED);
  auto out = c.client->Results(st->job_id());
  REQUIRE(out.ok());
  REQUIRE(out->size() == 1);
  CHECK(((*out)[0].output() == "0,1\n" || (*out)[0].output() == "1,0\n"));

  // Six 1-gpu tasks on 4 slots and 2 devices: two at a time, each its own.
  wire::JobSpec ones = FanoutJob("shell", "sleep 0.3; echo $CUDA_VISIBLE_DEVICES", 6);
  ones.mutable_template_()->mutable_demand()->set_gpus(1);
  ones.set_return_outputs(true);
  st = SubmitAndWait(*c.client, ones);
  REQUIRE(st.ok());
  REQUIRE(st->state() == wire::JOB_SUCCEEDED);
  out = c.client->Results(st->job_id());
  auto trace = c.client->Trace(st->job_id());
  REQUIRE(out.ok());
  REQUIRE(trace.ok());
  std::map<uint32_t, std::string> device;
  for (const auto& r : *out) device[r.task_index()] = r.output();
  REQUIRE(device.size() == 6);
  for (auto& [t, d] : device) CHECK((d == "0\n" || d == "1\n"));
  for (const auto& a : trace->attempts())
    for (const auto& b : trace->attempts())
      if (a.task() < b.task() && std::min(a.end_s(), b.end_s()) - std::max(a.start_s(), b.start_s()) > kMarginS) {
        INFO("tasks " << a.task() << " and " << b.task() << " overlapped");
        CHECK(device[a.task()] != device[b.task()]);
      }
  CHECK(MostAtOnce(*trace, trace->attempts(0).executor()) <= 2);
  // More GPUs than the executor has: refused with the reason.
  wire::JobSpec three = FanoutJob("shell", "true", 1);
  three.mutable_template_()->mutable_demand()->set_gpus(3);
  auto refused = c.client->Submit(three);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("3 gpu(s)") != std::string::npos);
}
