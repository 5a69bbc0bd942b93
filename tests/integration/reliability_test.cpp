// End to end for issue #10: a task that kills its executor, time limits,
// and a scheduler that stalls mid-job (the real daemons on loopback).
#include <catch2/catch.hpp>

#include <signal.h>

#include <memory>
#include <set>
#include <thread>

#include "tailcut/client/client.h"
#include "daemon_cluster.h"
#include "tailcut/client/local_cluster.h"

using namespace tailcut;

namespace {

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The scheduler daemon (policy none) and `executors` executor daemons,
// restarted whenever they exit; they run shell tasks (the poison task).
struct Fleet : testing::DaemonCluster {
  explicit Fleet(int executors, int slots = 2)
      : DaemonCluster({executors, slots, {"--policy", "none"}, {}, /*restart=*/true, /*client_timeout_s=*/20,
                       /*allow_shell=*/true}) {}
  wire::JobStatus Wait(JobId id) {
    WaitOptions w;
    w.timeout_s = 120;
    auto st = client->Wait(id, w);
    INFO(st.status().message());
    REQUIRE(st.ok());
    return *st;
  }
  // Submits `job` and waits for its final status.
  wire::JobStatus Run(const wire::JobSpec& job) {
    auto id = client->Submit(job);
    INFO(id.status().message());
    REQUIRE(id.ok());
    return Wait(*id);
  }
};

}  // namespace

TEST_CASE("reliability daemons: a task that kills its executor fails its job and the fleet keeps serving") {
  Fleet f(3);
  // sh's parent is the executor (posix_spawn): the task kills it. The sleep
  // lets the executor report the attempt as started first.
  wire::JobSpec poison = FanoutJob("shell", "sleep 0.5; kill -9 $PPID", 1);
  poison.set_max_attempts(2);
  auto bad = f.client->Submit(poison);
  REQUIRE(bad.ok());
  wire::JobSpec normal = FanoutJob("sleep", "ms=200", 30);
  normal.set_return_outputs(true);
  auto good = f.client->Submit(normal);
  REQUIRE(good.ok());
  wire::JobStatus bst = f.Wait(*bad);
  CHECK(bst.state() == wire::JOB_FAILED);
  INFO(bst.reason());
  CHECK(Contains(bst.reason(), "task 0 failed 2 times"));
  CHECK(Contains(bst.reason(), "executor was lost while it held the attempt"));
  CHECK(f.cluster->executor_exits() <= 2);  // every loss counts: max_attempts executors
  CHECK(f.Wait(*good).state() == wire::JOB_SUCCEEDED);
  auto results = f.client->Results(*good);
  REQUIRE(results.ok());
  std::set<uint32_t> tasks;
  for (const auto& r : *results) CHECK(tasks.insert(r.task_index()).second);
  CHECK(tasks.size() == 30);
  // The restarted executors serve new work.
  REQUIRE(f.cluster->WaitForExecutors(3, 30).ok());
  CHECK(f.Run(FanoutJob("noop", "", 20)).state() == wire::JOB_SUCCEEDED);
}

TEST_CASE("reliability daemons: attempts and jobs past their timeout_s fail with the reason") {
  Fleet f(1);
  wire::JobSpec slow_task = FanoutJob("sleep", "ms=60000", 1);
  slow_task.mutable_template_()->set_timeout_s(0.5);
  slow_task.set_max_attempts(2);
  wire::JobStatus tst = f.Run(slow_task);
  CHECK(tst.state() == wire::JOB_FAILED);
  CHECK(Contains(tst.reason(), "attempt exceeded its time limit of 0.5 s since launch"));
  CHECK(tst.failed_attempts() == 2);
  wire::JobSpec slow_job = FanoutJob("sleep", "ms=60000", 2);
  slow_job.set_timeout_s(1);
  wire::JobStatus jst = f.Run(slow_job);
  CHECK(jst.state() == wire::JOB_FAILED);
  CHECK(Contains(jst.reason(), "job exceeded timeout_s = 1"));
  // The executor was told to stop them: its slots run new work.
  CHECK(f.Run(FanoutJob("sleep", "ms=10", 4)).state() == wire::JOB_SUCCEEDED);
}

TEST_CASE("reliability daemons: a scheduler stalled past lost_after keeps its executors' work") {
  Fleet f(2);
  // Two waves of 2.5 s tasks on 4 slots: the first wave still runs when the
  // executors give up on the silent scheduler and register again.
  const uint32_t kTasks = 8;
  wire::JobSpec job = FanoutJob("sleep", "ms=2500", kTasks);
  job.set_return_outputs(true);
  auto id = f.client->Submit(job);
  REQUIRE(id.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  f.cluster->SignalScheduler(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // 1.5x lost_after
  f.cluster->SignalScheduler(SIGCONT);
  wire::JobStatus st = f.Wait(*id);
  CHECK(st.state() == wire::JOB_SUCCEEDED);
  CHECK(st.committed() == kTasks);
  // Work was kept, not redone: at most one slot's worth of attempts again
  // (a result that was in flight when a connection was replaced).
  CHECK(st.attempts() <= kTasks + 4);
  auto results = f.client->Results(*id);
  REQUIRE(results.ok());
  std::set<uint32_t> tasks;
  for (const auto& r : *results) CHECK(tasks.insert(r.task_index()).second);  // every task once
  CHECK(tasks.size() == kTasks);
  auto execs = f.client->Executors();
  REQUIRE(execs.ok());
  CHECK(execs->size() == 2);
  CHECK(f.cluster->executor_exits() == 0);
}
