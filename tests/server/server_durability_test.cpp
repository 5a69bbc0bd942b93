// The journal across scheduler restarts (scheduler/server/durability/):
// a divisible job's shares, output promotions, request keys.
#include "server_fixture.h"

using namespace tailcut;
using namespace tailcut::server_test;

TEST_CASE("server: a divisible job keeps its shares across a scheduler restart, and its commits") {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("tc_shares_" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  ServerOptions o = TestOptions();
  o.state_dir = dir;
  wire::JobSpec spec = FanoutJob("noop", "", 3);
  spec.set_divisible_units(30);
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> first_run;  // task -> (begin, count)
  JobId id = 0;
  zmq::context_t ctx;
  {
    RunningServer rs(o);
    ScriptedExecutor ex(ctx, rs.server->executor_endpoint());
    Client client(rs.ClientOpts());
    wire::SchedulerToExecutor msg;
    id = RegisterAndSubmit(ex, 3, client, spec, &msg);
    REQUIRE(msg.work().assign_size() == 3);
    uint64_t task0_attempt = 0;
    for (const auto& a : msg.work().assign()) {
      first_run[a.task_index()] = {a.share().begin(), a.share().count()};
      if (a.task_index() == 0) task0_attempt = a.attempt_id();
    }
    ex.Complete({task0_attempt});
    for (int i = 0; i < 100 && client.GetStatus(id)->committed() < 1; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(client.GetStatus(id)->committed() == 1);
  }  // the scheduler stops; the job stays in its journal
  {
    RunningServer rs(o);
    ScriptedExecutor ex(ctx, rs.server->executor_endpoint());
    ex.Register(3);
    wire::SchedulerToExecutor msg;
    REQUIRE(ex.Next(&msg));
    REQUIRE(ex.Next(&msg));
    REQUIRE(msg.work().assign_size() == 2);  // task 0 stays committed
    std::vector<uint64_t> attempts;
    for (const auto& a : msg.work().assign()) {
      CHECK(a.task_index() != 0);
      CHECK(std::pair<uint64_t, uint64_t>{a.share().begin(), a.share().count()} == first_run.at(a.task_index()));
      CHECK(a.share().total() == 30);
      attempts.push_back(a.attempt_id());
    }
    ex.Complete(attempts);
    Client client(rs.ClientOpts());
    auto st = client.Wait(id);
    REQUIRE(st.ok());
    CHECK(st->state() == wire::JOB_SUCCEEDED);
  }
  std::filesystem::remove_all(dir);
}

// docs/JOBS.md, "Output directories": a commit of a job with output_dir
// sends Work.promote to the executor (after the commit is journaled) and
// again until answered; a scheduler stopped before the answer sends it
// again from its journal, and the job succeeds only once it is answered.
TEST_CASE(
    "server: an unanswered promotion is resent, also by the next run from the journal, and the job then succeeds") {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("tc_promote_" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  ServerOptions o = TestOptions();
  o.state_dir = dir;
  wire::JobSpec spec = FanoutJob("noop", "", 1);
  spec.set_output_dir("/data/out");  // the scheduler never touches it: the executor does
  // The next Promote, reporting (a heartbeat) meanwhile so the executor stays alive.
  auto next_promote = [](ScriptedExecutor& ex, wire::Promote* out) {
    wire::SchedulerToExecutor msg;
    for (int i = 0; i < 100; ++i) {
      ex.Heartbeat();
      if (ex.Next(&msg, 0.1) && msg.has_work() && msg.work().promote_size() > 0) {
        *out = msg.work().promote(0);
        return true;
      }
    }
    return false;
  };
  JobId id = 0;
  uint64_t attempt = 0;
  zmq::context_t ctx;
  {
    RunningServer rs(o);
    ScriptedExecutor ex(ctx, rs.server->executor_endpoint());
    Client client(rs.ClientOpts());
    wire::SchedulerToExecutor msg;
    id = RegisterAndSubmit(ex, 1, client, spec, &msg);
    REQUIRE(msg.work().assign_size() == 1);
    CHECK(msg.work().assign(0).output_dir() == "/data/out");
    attempt = msg.work().assign(0).attempt_id();
    ex.Complete({attempt});
    wire::Promote p;
    REQUIRE(next_promote(ex, &p));
    CHECK(p.job_id() == id);
    CHECK(p.task_index() == 0);
    CHECK(p.attempt_id() == attempt);
    CHECK(p.output_dir() == "/data/out");
    REQUIRE(next_promote(ex, &p));  // not answered: sent again
    CHECK(p.attempt_id() == attempt);
    auto st = client.GetStatus(id);
    REQUIRE(st.ok());
    CHECK(st->committed() == 1);
    CHECK(st->state() == wire::JOB_RUNNING);  // its output is not in place yet
  }  // the scheduler stops before any answer; the promotion stays in its journal
  {
    RunningServer rs(o);
    ScriptedExecutor ex(ctx, rs.server->executor_endpoint());
    ex.Register(1);
    wire::Promote p;
    REQUIRE(next_promote(ex, &p));  // from the journal: the same attempt, nothing run again
    CHECK(p.job_id() == id);
    CHECK(p.attempt_id() == attempt);
    wire::ExecutorMessage answer;
    answer.set_version(kProtocolVersion);
    wire::Promoted* done = answer.mutable_report()->add_promoted();
    done->set_job_id(id);
    done->set_task_index(0);
    done->set_attempt_id(attempt);
    ex.Send(answer);
    ex.Send(answer);  // a repeated answer changes nothing
    Client client(rs.ClientOpts());
    auto st = client.Wait(id);
    REQUIRE(st.ok());
    CHECK(st->state() == wire::JOB_SUCCEEDED);
    CHECK(st->attempts() == 1);  // restored: this run launched nothing; the journal's commit had one
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("server: a request key is bound to its job body: a retry gets the job, another body is refused") {
  OneExecutorCluster c(TestOptions(), 1);
  wire::JobSpec job = FanoutJob("sleep", "ms=100000", 1);
  job.set_request_key("the-key");
  auto first = c.client->Submit(job);
  REQUIRE(first.ok());
  auto retry = c.client->Submit(job);
  REQUIRE(retry.ok());
  CHECK(*retry == *first);
  wire::JobSpec other = FanoutJob("sleep", "ms=1", 1);
  other.set_request_key("the-key");
  auto refused = c.client->Submit(other);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == Status::Code::kInvalidArgument);
  CHECK(refused.status().message().find("request key 'the-key' already made job " + std::to_string(*first)) !=
        std::string::npos);
}

// ServerOptions::commit_linger_s (docs/RELIABILITY.md, "Group commits"): a
// turn that holds a submit reply and sent Work waits for the executor's
// Report and commits its result with the accept, so a one-task job pays one
// group commit. The reply still follows the commit that holds the result
// (a restart finds the job succeeded). Without the wait (0), the reply
// goes out after the accept's own commit, before the Report; with an
// executor that never answers, the wait ends at its bound.
TEST_CASE("server: a short task's result joins its job's accept commit, and the wait is bounded") {
  const std::string base =
      (std::filesystem::temp_directory_path() / ("tc_linger_" + std::to_string(::getpid()))).string();
  zmq::context_t ctx;
  // A one-task job submitted in state_dir `dir` while the executor answers
  // after `answer_ms` (never when < 0): the job's state as soon as the
  // submit returned, and how long the submit took.
  auto run = [&](const std::string& dir, double linger_s, int answer_ms, wire::JobState* state, double* took_s) {
    std::filesystem::remove_all(dir);
    ServerOptions o = TestOptions();
    o.state_dir = dir;
    o.commit_linger_s = linger_s;
    RunningServer rs(o);
    ScriptedExecutor ex(ctx, rs.server->executor_endpoint());
    ex.Register(1);
    wire::SchedulerToExecutor msg;
    REQUIRE(ex.Next(&msg));  // the acknowledgement
    Client client(rs.ClientOpts());
    StatusOr<JobId> id = Status::Internal("not submitted");
    StatusOr<wire::JobStatus> seen = Status::Internal("not asked");
    const auto t0 = std::chrono::steady_clock::now();
    std::thread submit([&] {
      id = client.Submit(FanoutJob("noop", "", 1));
      *took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (id.ok()) seen = client.GetStatus(*id);
    });
    REQUIRE(ex.Next(&msg));
    REQUIRE(msg.work().assign_size() == 1);
    if (answer_ms >= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(answer_ms));
      ex.Complete({msg.work().assign(0).attempt_id()});
    }
    submit.join();
    REQUIRE(id.ok());
    REQUIRE(seen.ok());
    *state = seen->state();
    return *id;
  };
  wire::JobState state;
  double took = 0;
  const JobId id = run(base + "_a", 0.1, 20, &state, &took);
  CHECK(state == wire::JOB_SUCCEEDED);  // the reply waited for the result's commit
  {
    ServerOptions o = TestOptions();
    o.state_dir = base + "_a";
    RunningServer rs(o);
    Client client(rs.ClientOpts());
    auto st = client.GetStatus(id);  // from the journal
    REQUIRE(st.ok());
    CHECK(st->state() == wire::JOB_SUCCEEDED);
  }
  run(base + "_b", 0, 300, &state, &took);
  CHECK(state == wire::JOB_RUNNING);  // replied after the accept's commit, before the Report
  run(base + "_c", 0.05, -1, &state, &took);
  CHECK(state == wire::JOB_RUNNING);
  CHECK(took < 2.0);  // the bound, with room for a loaded machine
  for (const char* s : {"_a", "_b", "_c"}) std::filesystem::remove_all(base + s);
}
