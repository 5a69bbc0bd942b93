// End to end: the real tailcut-scheduler and tailcut-executor binaries on
// loopback, driven through the client library.
#include <catch2/catch.hpp>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <thread>

#include "daemon_cluster.h"
#include "tailcut/client/client.h"
#include "tailcut/client/local_cluster.h"

using namespace tailcut;
using tailcut::testing::SubmitAndWait;

namespace {

// `executors` daemons of `slots` slots; extra flags for the scheduler and
// for executor i (e.g. fault injection); `allow_shell`: they run shell tasks.
struct Cluster : testing::DaemonCluster {
  explicit Cluster(int executors, int slots = 2, std::vector<std::string> scheduler_flags = {},
                   std::vector<std::vector<std::string>> executor_flags = {}, bool allow_shell = false)
      : DaemonCluster(Options(executors, slots, std::move(scheduler_flags), std::move(executor_flags), allow_shell)) {}
  static testing::DaemonClusterOptions Options(int executors, int slots, std::vector<std::string> scheduler_flags,
                                               std::vector<std::vector<std::string>> executor_flags, bool allow_shell) {
    testing::DaemonClusterOptions o{executors, slots, std::move(scheduler_flags), std::move(executor_flags)};
    o.allow_shell = allow_shell;
    return o;
  }
};

}  // namespace

TEST_CASE("daemons: a 10000-task noop job completes") {
  Cluster c(1, 2, {"--policy", "none"});
  auto st = SubmitAndWait(*c.client, FanoutJob("noop", "", 10000));
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  CHECK(st->committed() == 10000);
}

TEST_CASE("daemons: capped executors finish a job without failures, and an output over the cap fails clearly") {
  std::vector<std::string> caps = {"--max-queued", "2", "--max-output-bytes", "4096"};
  Cluster c(2, 2, {"--policy", "none"}, {caps, caps}, /*allow_shell=*/true);
  // Short tasks are pipelined, but never beyond 2 queued per executor:
  // nothing is refused for good, nothing counts as a failure.
  wire::JobSpec job = FanoutJob("shell", "printf '%0100d' 0", 300);
  job.set_return_outputs(true);
  auto st = SubmitAndWait(*c.client, job);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  CHECK(st->committed() == 300);
  CHECK(st->failed_attempts() == 0);

  wire::JobSpec big = FanoutJob("shell", "printf '%05000d' 0", 1);
  big.set_max_attempts(2);
  st = SubmitAndWait(*c.client, big);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_FAILED);
  CHECK(st->reason().find("output of 5000 bytes exceeds the executor's max_output_bytes=4096") != std::string::npos);
}

TEST_CASE("daemons: an executor killed mid-job and every task still commits exactly once") {
  Cluster c(3);
  wire::JobSpec job = FanoutJob("sleep", "ms=150", 60);
  job.set_return_outputs(true);
  auto id = c.client->Submit(job);
  REQUIRE(id.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  c.cluster->SignalExecutor(0, SIGKILL);  // dies without a goodbye
  WaitOptions w;
  w.timeout_s = 60;
  auto st = c.client->Wait(*id, w);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  CHECK(st->attempts() > 60);  // the dead executor's attempts ran again
  auto results = c.client->Results(*id);
  REQUIRE(results.ok());
  std::set<uint32_t> tasks;
  for (const auto& r : *results) CHECK(tasks.insert(r.task_index()).second);  // no task twice
  CHECK(tasks.size() == 60);
  auto execs = c.client->Executors();
  REQUIRE(execs.ok());
  CHECK(execs->size() == 2);
  CHECK(c.cluster->SchedulerAlive());
}

TEST_CASE("daemons: bad jobs get clear errors and both daemons keep serving") {
  Cluster c(1, 2, {}, {}, /*allow_shell=*/true);
  auto unknown = c.client->Submit(FanoutJob("no-such-kernel", "", 1));
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message().find("no-such-kernel") != std::string::npos);
  wire::JobSpec gpu = FanoutJob("noop", "", 1);
  gpu.mutable_template_()->mutable_demand()->set_gpus(1);
  auto infeasible = c.client->Submit(gpu);
  REQUIRE_FALSE(infeasible.ok());
  CHECK(infeasible.status().message().find("gpu") != std::string::npos);
  // A kernel that fails: retried, then the job fails with the kernel's error.
  wire::JobSpec failing = FanoutJob("shell", "exit 7", 1);
  failing.set_max_attempts(2);
  auto fid = c.client->Submit(failing);
  REQUIRE(fid.ok());
  auto fst = c.client->Wait(*fid);
  REQUIRE(fst.ok());
  CHECK(fst->state() == wire::JOB_FAILED);
  CHECK(fst->reason().find("7") != std::string::npos);
  CHECK(fst->failed_attempts() == 2);
  // Arguments the kernel does not take are refused at submit, naming what
  // it takes (its declaration, Register.kernel_args).
  auto refused_args = c.client->Submit(FanoutJob("sleep", "ms=abc", 1));
  REQUIRE_FALSE(refused_args.ok());
  CHECK(refused_args.status().message().find("'ms' must be a finite number, got 'abc' (it takes ms (number") !=
        std::string::npos);
  // Arguments a kernel of its own format rejects when it runs fail the
  // attempt, not the executor.
  auto bad_args = c.client->Submit(FanoutJob("coded_matmul", "not a coded task", 1));
  REQUIRE(bad_args.ok());
  auto bst = c.client->Wait(*bad_args);
  REQUIRE(bst.ok());
  CHECK(bst->state() == wire::JOB_FAILED);
  // Still serving.
  auto ok = c.client->Submit(FanoutJob("noop", "", 10));
  REQUIRE(ok.ok());
  auto st = c.client->Wait(*ok);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  CHECK(c.cluster->SchedulerAlive());
  CHECK(c.cluster->ExecutorAlive(0));
}

TEST_CASE("daemons: shell runs only on executors started with --allow-shell, and a submit without one names the flag") {
  Cluster c(1);  // a plain executor: every built-in but shell
  auto refused = c.client->Submit(FanoutJob("shell", "echo hi", 1));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find(
            "no executor runs kernel 'shell' (executors offer it only when started with --allow-shell)") !=
        std::string::npos);

  LocalExecutorSpec shell;
  shell.flags = {"--slots", "1", "--name", "it-shell"};
  shell.allow_shell = true;
  REQUIRE(c.cluster->AddExecutor(shell).ok());
  REQUIRE(c.cluster->WaitForExecutors(2, 30).ok());
  wire::JobSpec job = FanoutJob("shell", "echo hi", 2);
  job.set_return_outputs(true);
  auto st = SubmitAndWait(*c.client, job);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  auto results = c.client->Results(st->job_id());
  REQUIRE(results.ok());
  for (const auto& r : *results) CHECK(r.output() == "hi\n");
}

TEST_CASE("daemons: an external plugin named in the config loads and copies a straggling task") {
  std::string config =
      std::filesystem::temp_directory_path() / ("tailcut-it-plugin-" + std::to_string(getpid()) + ".toml");
  {
    std::ofstream f(config);
    f << "[policies]\nchain = \"external\"\n[[policies.external]]\npath = \"" << TAILCUT_EXAMPLE_PLUGIN_PATH
      << "\"\nname = \"fixed_delay\"\ndelay_s = 0.2\n";
  }
  // Executor 0 is 40x slower: its 50 ms tasks take two seconds.
  Cluster c(2, 2, {"--config", config, "--set", "core.redundancy_budget=0.5"}, {{"--slowdown", "40"}});
  auto id = c.client->Submit(FanoutJob("sleep", "ms=50", 4));
  REQUIRE(id.ok());
  auto st = c.client->Wait(*id);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  CHECK(st->copies() >= 1);                                 // the plugin acted
  CHECK(st->finished_at_s() - st->submitted_at_s() < 1.5);  // copies beat the 2 s stragglers
  std::filesystem::remove(config);
}

TEST_CASE("daemons: output_dir: racing clones write files, each task ends with one directory, the committed one's") {
  namespace fs = std::filesystem;
  const fs::path out = fs::temp_directory_path() / ("tailcut-it-out-" + std::to_string(getpid()));
  fs::remove_all(out);
  fs::create_directories(out);
  // clone: every task of a small job runs twice from the start, so the two attempts race on every task
  // (8 slots: clones take only the slots the job's own 4 tasks leave idle).
  Cluster c(2, 4, {"--policy", "clone", "--set", "core.redundancy_budget=1", "--set", "policies.clone.budget_share=1"},
            {},
            /*allow_shell=*/true);
  const uint32_t tasks = 4;
  wire::JobSpec job = FanoutJob(
      "shell", "d=\"$TAILCUT_OUTPUT_DIR\"; basename \"$d\" > \"$d/who\"; sleep 0.2; echo complete > \"$d/done\"",
      tasks);
  job.set_output_dir(out.string());
  job.set_idempotent(true);  // its effects stay in its own directory: copies may race (docs/JOBS.md)
  job.set_return_outputs(true);
  auto st = SubmitAndWait(*c.client, job);
  REQUIRE(st.ok());
  REQUIRE(st->state() == wire::JOB_SUCCEEDED);
  CHECK(st->copies() >= tasks);  // the clones ran: attempts raced on every task
  auto results = c.client->Results(st->job_id());
  REQUIRE(results.ok());
  REQUIRE(results->size() == tasks);
  // The job succeeded, so every task's directory is in place already: the committed attempt's, complete.
  for (const auto& r : *results) {
    const fs::path dir = out / ("task-" + std::to_string(r.task_index()));
    std::ifstream who(dir / "who"), done(dir / "done");
    std::string w, d;
    std::getline(who, w);
    std::getline(done, d);
    CHECK(w ==
          std::to_string(st->job_id()) + "." + std::to_string(r.task_index()) + "." + std::to_string(r.attempt_id()));
    CHECK(d == "complete");
  }
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(out)) entries += e.path().filename() != ".tailcut-attempts";
  CHECK(entries == tasks);
  // The losers' directories go (at the promotion, or when their cancel reaches their executor).
  auto attempt_dirs = [&] {
    size_t n = 0;
    std::error_code ec;
    for (fs::directory_iterator it(out / ".tailcut-attempts", ec), end; !ec && it != end; it.increment(ec)) ++n;
    return n;
  };
  for (int i = 0; i < 100 && attempt_dirs() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(attempt_dirs() == 0);

  // An output_dir the executors do not have: the attempt fails at once, saying so.
  wire::JobSpec missing = FanoutJob("shell", "true", 1);
  missing.set_output_dir((out / "not-there").string());
  missing.set_max_attempts(1);
  st = SubmitAndWait(*c.client, missing);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_FAILED);
  CHECK(st->reason().find("output_dir '" + (out / "not-there").string() +
                          "' is not a directory on this executor's machine") != std::string::npos);
  // A relative one is refused at submit.
  wire::JobSpec relative = FanoutJob("shell", "true", 1);
  relative.set_output_dir("out");
  auto refused = c.client->Submit(relative);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("output_dir 'out' must be an absolute path") != std::string::npos);
  fs::remove_all(out);
}

TEST_CASE("daemons: a plugin policy that throws is disabled with an error log and the scheduler keeps serving") {
  Cluster c(2, 2, {"--policy", std::string("plugin:") + TAILCUT_THROWING_PLUGIN_PATH + ",clone"});
  for (int i = 0; i < 3; ++i) {  // policies tick every 0.1 s: the plugin throws during the first job
    auto st = SubmitAndWait(*c.client, FanoutJob("sleep", "ms=100", 8));
    REQUIRE(st.ok());
    CHECK(st->state() == wire::JOB_SUCCEEDED);
  }
  CHECK(c.cluster->SchedulerAlive());
  std::ifstream log(c.cluster->log_dir() + "/scheduler.log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  INFO(text);
  CHECK(text.find("ERROR") != std::string::npos);
  CHECK(text.find("policy 'throwing' disabled: OnTick threw: deliberate failure in the throwing plugin") !=
        std::string::npos);
}

TEST_CASE(
    "daemons: a scheduler killed with SIGKILL mid-job resumes from its journal, its waiting client gets the job's own "
    "status") {
  Cluster c(2);
  wire::JobSpec job = FanoutJob("sleep", "ms=100", 40);
  job.set_return_outputs(true);
  auto id = c.client->Submit(job);
  REQUIRE(id.ok());
  // The submitting client waits across the crash, as a user's would.
  StatusOr<wire::JobStatus> waited = Status::Internal("not run");
  std::thread waiter([&] {
    WaitOptions w;
    w.timeout_s = 120;
    waited = c.client->Wait(*id, w);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  c.cluster->SignalScheduler(SIGKILL);
  REQUIRE(c.cluster->RestartScheduler().ok());
  waiter.join();
  INFO(waited.status().message());
  REQUIRE(waited.ok());
  CHECK(waited->job_id() == *id);
  CHECK(waited->state() == wire::JOB_SUCCEEDED);
  CHECK(waited->committed() == 40);
  auto results = c.client->Results(*id);
  REQUIRE(results.ok());
  std::set<uint32_t> tasks;
  for (const auto& r : *results) CHECK(tasks.insert(r.task_index()).second);  // every task exactly once
  CHECK(tasks.size() == 40);
  // Ids are never reused after a restart.
  auto next = c.client->Submit(FanoutJob("noop", "", 1));
  REQUIRE(next.ok());
  CHECK(*next > *id);
}

TEST_CASE("daemons: a submit retried with the same request key makes one job") {
  Cluster c(1);
  wire::JobSpec job = FanoutJob("noop", "", 5);
  job.set_request_key("retry-me-" + std::to_string(getpid()));
  auto first = c.client->Submit(job);
  auto second = c.client->Submit(job);
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK(*first == *second);
  auto st = c.client->Wait(*first);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  CHECK(st->attempts() == 5);  // its tasks ran once
  CHECK(st->request_key() == job.request_key());
}

TEST_CASE("daemons: a request key reused for another job body is refused with the first job's id") {
  Cluster c(1);
  wire::JobSpec job = FanoutJob("noop", "", 2);
  job.set_request_key("bound-" + std::to_string(getpid()));
  auto first = c.client->Submit(job);
  REQUIRE(first.ok());
  job.mutable_template_()->set_args("changed");
  auto second = c.client->Submit(job);
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == Status::Code::kInvalidArgument);
  CHECK_THAT(second.status().message(), Catch::Contains("already made job " + std::to_string(*first)));
}
