// Issue 21 end to end, over the real daemons: a task with side effects runs
// once under the default chain even with a straggler in the fleet
// (docs/POLICIES.md, "Side effects"), and exec tasks know who they are
// (docs/KERNELS.md, "exec"); issue 43: a scheduler killed between reading a
// result and journaling it does not run the task again.
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>

#include "daemon_cluster.h"
#include "tailcut/common/kernel_args.h"

using namespace tailcut;
using tailcut::testing::SubmitAndWait;
namespace fs = std::filesystem;

namespace {

std::string Fresh(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("tailcut-it-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

size_t Lines(const std::string& path) {
  std::ifstream in(path);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

}  // namespace

TEST_CASE("side effects: a one-task shell job appends one line under the default chain, with a straggler") {
  // Executor 0 is a straggler: every attempt waits 2 s before it runs.
  // The default chain without the payoff controller around it: the
  // controller's coin decides whether a one-task job gets its clone while it
  // warms up (docs/POLICIES.md), and this test needs the clone proposed.
  testing::DaemonClusterOptions o{
      2, 2, {"--policy", "clone,predictive,reassign"}, {{"--delay-prob", "1", "--delay-ms", "2000"}}};
  o.allow_shell = true;
  testing::DaemonCluster c(o);
  const std::string dir = Fresh("side");
  for (int round = 0; round < 3; ++round) {  // wherever it lands
    const std::string file = dir + "/side-" + std::to_string(round) + ".txt";
    auto st = SubmitAndWait(*c.client, FanoutJob("shell", "echo ran-$$ >> " + file, 1));
    REQUIRE(st.ok());
    CHECK(st->state() == wire::JOB_SUCCEEDED);
    CHECK(Lines(file) == 1);
    CHECK(st->copies() == 0);
    CHECK(st->copies_refused_side_effects() == 1);  // the default chain's clone was refused
  }
  // Declared idempotent, the same job is cloned (the copy on the straggler
  // is cancelled in its delay when the other commits, or runs too: both
  // are what the submitter allowed).
  const std::string twice = dir + "/twice.txt";
  wire::JobSpec job = FanoutJob("shell", "echo ran-$$ >> " + twice, 1);
  job.set_idempotent(true);
  auto st = SubmitAndWait(*c.client, job);
  REQUIRE(st.ok());
  CHECK(st->copies() == 1);
  CHECK(st->copies_refused_side_effects() == 0);
  CHECK(Lines(twice) >= 1);
  fs::remove_all(dir);
}

TEST_CASE("exec: 100 tasks of a script that prints its task index print 0..99, each once") {
  const std::string dir = Fresh("exec");
  const std::string prog = dir + "/index.sh";
  std::ofstream(prog) << "#!/bin/sh\necho \"$TAILCUT_TASK_INDEX $1 $TAILCUT_TASK_COUNT\"\n";
  chmod(prog.c_str(), 0755);
  testing::DaemonClusterOptions o{2, 4, {}, {}};
  o.executor_flags = {{"--allow-exec", "--exec-allow", dir + "/"}, {"--allow-exec", "--exec-allow", dir + "/"}};
  testing::DaemonCluster c(o);
  ExecArgs args;
  args.argv = {prog, "arg-{index}"};  // templated per task by the executor
  wire::JobSpec job = FanoutJob("exec", FormatExecArgs(args).value(), 100);
  REQUIRE(job.template_().args_template());
  job.set_return_outputs(true);
  auto st = SubmitAndWait(*c.client, job);
  REQUIRE(st.ok());
  INFO(st->reason());
  REQUIRE(st->state() == wire::JOB_SUCCEEDED);
  auto results = c.client->Results(st->job_id());
  REQUIRE(results.ok());
  REQUIRE(results->size() == 100);
  std::multiset<std::string> printed;
  std::set<std::string> expected;
  for (const auto& r : *results) {
    printed.insert(r.output());
    CHECK(r.output() == std::to_string(r.task_index()) + " arg-" + std::to_string(r.task_index()) + " 100\n");
  }
  for (int i = 0; i < 100; ++i) expected.insert(std::to_string(i) + " arg-" + std::to_string(i) + " 100\n");
  CHECK(std::set<std::string>(printed.begin(), printed.end()) == expected);
  CHECK(printed.size() == 100);

  // A program outside exec_allow fails the job with the reason.
  ExecArgs other;
  other.argv = {"/bin/true"};
  wire::JobSpec refused = FanoutJob("exec", FormatExecArgs(other).value(), 1);
  refused.set_max_attempts(1);
  auto bad = SubmitAndWait(*c.client, refused);
  REQUIRE(bad.ok());
  CHECK(bad->state() == wire::JOB_FAILED);
  CHECK(bad->reason().find("/bin/true is not in this executor's exec_allow") != std::string::npos);
  fs::remove_all(dir);
}

// Issue 43: the scheduler is SIGKILLed exactly between reading an
// executor's Report with the task's result and committing that result to
// its journal (tailcut-scheduler-faults, fault_hooks.cpp). The journal then
// still says "launched on that executor"; the executor, which no longer
// holds the attempt, sends the result again in its Register (`undelivered`,
// docs/PROTOCOL.md), so the restarted scheduler commits it instead of
// running the task a second time.
TEST_CASE("side effects: a scheduler killed between reading a result and journaling it runs the task once") {
  const std::string dir = Fresh("killcommit");
  const std::string marker = dir + "/killed", file = dir + "/side.txt";
  setenv("TAILCUT_FAULT_KILL_AT_COMMIT", marker.c_str(), 1);  // the restart inherits it too: the marker stops it
  testing::DaemonClusterOptions o{1, 2, {}, {}};
  o.allow_shell = true;
  o.scheduler_binary = TAILCUT_SCHEDULER_FAULTS_BIN;
  testing::DaemonCluster c(o);
  unsetenv("TAILCUT_FAULT_KILL_AT_COMMIT");
  wire::JobSpec job = FanoutJob("shell", "echo ran-$$ >> " + file, 1);  // not idempotent: shell's default
  job.set_return_outputs(true);
  auto id = c.client->Submit(job);
  REQUIRE(id.ok());
  for (int i = 0; i < 300 && c.cluster->SchedulerAlive(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE_FALSE(c.cluster->SchedulerAlive());  // it died at the commit ...
  std::ifstream killed(marker);
  std::string at;
  std::getline(killed, at);
  INFO("killed at: " << at);
  REQUIRE(at.rfind("job " + std::to_string(*id) + " task 0 attempt ", 0) == 0);  // ... of this task
  CHECK(Lines(file) == 1);                                                       // which ran once so far
  REQUIRE(c.cluster->RestartScheduler().ok());
  WaitOptions w;
  w.timeout_s = 60;
  auto st = c.client->Wait(*id, w);
  REQUIRE(st.ok());
  INFO(st->reason());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  CHECK(Lines(file) == 1);  // the side effect happened once
  CHECK(st->committed() == 1);
  auto results = c.client->Results(*id);
  REQUIRE(results.ok());
  REQUIRE(results->size() == 1);
  CHECK(at == "job " + std::to_string(*id) + " task 0 attempt " + std::to_string((*results)[0].attempt_id()));
  std::ifstream log(c.cluster->log_dir() + "/scheduler.log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Catch::Contains("results (1 committed)"));  // the result the executor sent again
  fs::remove_all(dir);
}
