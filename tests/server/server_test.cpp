// The scheduler daemon's loop (server_fixture.h): registration, batched
// work, results, watchers and traces, loss, shutdown, eviction.
#include "server_fixture.h"

using namespace tailcut;
using namespace tailcut::server_test;

TEST_CASE("server: register, batched work, results, job succeeds") {
  RunningServer rs;
  zmq::context_t ctx;
  ScriptedExecutor ex(ctx, rs.server->executor_endpoint());
  ex.Register(4);
  wire::SchedulerToExecutor msg;
  REQUIRE(ex.Next(&msg));
  REQUIRE(msg.has_registered());
  CHECK(msg.registered().executor_id() > 0);

  Client client(rs.ClientOpts());
  wire::JobSpec job = FanoutJob("noop", "", 8);
  job.set_return_outputs(true);
  auto id = client.Submit(job);
  REQUIRE(id.ok());
  int done = 0;
  while (done < 8) {
    REQUIRE(ex.Next(&msg));
    REQUIRE(msg.has_work());
    CHECK(msg.work().assign_size() <= 4 + 4 * 512);
    std::vector<uint64_t> ids;
    for (auto& a : msg.work().assign()) {
      CHECK(a.kernel() == "noop");
      ids.push_back(a.attempt_id());
    }
    ex.Complete(ids);
    done += static_cast<int>(ids.size());
  }
  auto st = client.Wait(*id);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  auto outs = client.Results(*id);
  REQUIRE(outs.ok());
  CHECK(outs->size() == 8);
  auto execs = client.Executors();
  REQUIRE(execs.ok());
  REQUIRE(execs->size() == 1);
  CHECK(execs->at(0).finished() == 8);
}

TEST_CASE("server: trace_path records one trace row per committed attempt") {
  const std::string path = "server_trace_test." + std::to_string(::getpid()) + ".csv";
  std::remove(path.c_str());
  {
    ServerOptions o = TestOptions();
    o.trace_path = path;
    OneExecutorCluster c(o, 4);
    auto id = c.client->Submit(FanoutJob("noop", "", 6));
    REQUIRE(id.ok());
    wire::SchedulerToExecutor msg;
    for (int done = 0; done < 6;) {
      REQUIRE(c.ex.Next(&msg));
      REQUIRE(msg.has_work());
      std::vector<uint64_t> ids;
      for (auto& a : msg.work().assign()) ids.push_back(a.attempt_id());
      c.ex.Complete(ids);
      done += static_cast<int>(ids.size());
    }
    auto st = c.client->Wait(*id);
    REQUIRE(st.ok());
    CHECK(st->state() == wire::JOB_SUCCEEDED);
  }  // the server stops: the trace is flushed
  auto rows = ReadTraceCsv(path);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 6);
  for (const TraceRow& r : *rows) {
    CHECK(r.task_class == "noop");
    CHECK(r.duration() == Approx(0.001));
  }
  std::remove(path.c_str());

  Config bad = Config::Parse("[scheduler]\ntrace_max_mb = 0\n").value();
  ServerOptions o;
  Status s = LoadServerOptions(bad, &o);
  CHECK(s.message().find("trace_max_mb") != std::string::npos);
}

TEST_CASE("server: bad input gets an error and the daemon keeps serving") {
  RunningServer rs;
  zmq::context_t ctx;
  // Random bytes on the executor socket.
  ScriptedExecutor junk(ctx, rs.server->executor_endpoint());
  std::mt19937 rng(7);
  for (int i = 0; i < 50; ++i) {
    std::string bytes(1 + rng() % 200, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    junk.sock.send(zmq::buffer(bytes));
  }
  wire::SchedulerToExecutor reply;
  REQUIRE(junk.Next(&reply));
  CHECK(reply.has_error());
  // Wrong protocol version.
  wire::ExecutorMessage old;
  old.set_version(99);
  old.mutable_register_()->set_name("old");
  junk.Send(old);
  bool saw_version_error = false;
  while (junk.Next(&reply, 2))
    if (reply.error().code() == wire::Error::VERSION_MISMATCH) saw_version_error = true;
  CHECK(saw_version_error);
  // Reports before registering.
  junk.Heartbeat();
  REQUIRE(junk.Next(&reply));
  CHECK(reply.error().code() == wire::Error::UNKNOWN_EXECUTOR);

  // Random bytes and multi-frame garbage on the client socket.
  zmq::socket_t raw(ctx, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.connect(rs.server->client_endpoint());
  for (int i = 0; i < 50; ++i) {
    std::string bytes(1 + rng() % 200, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    raw.send(zmq::buffer(bytes), zmq::send_flags::sndmore);
    raw.send(zmq::buffer(bytes));
  }
  zmq::pollitem_t item{raw.handle(), 0, ZMQ_POLLIN, 0};
  zmq::poll(&item, 1, std::chrono::milliseconds(5000));
  REQUIRE(item.revents & ZMQ_POLLIN);
  zmq::message_t f;
  (void)raw.recv(f);
  wire::ClientReply cr;
  REQUIRE(FromFrame(f, &cr));
  CHECK(cr.error().code() == wire::Error::BAD_MESSAGE);

  // Still serving: a real executor registers and a job runs.
  ScriptedExecutor ex(ctx, rs.server->executor_endpoint());
  ex.Register(2);
  REQUIRE(ex.Next(&reply));
  REQUIRE(reply.has_registered());
  Client client(rs.ClientOpts());
  // A kernel nobody offers: a clear error naming it.
  auto unknown = client.Submit(FanoutJob("frobnicate", "", 3));
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message().find("frobnicate") != std::string::npos);
  CHECK(unknown.status().message().find("UNKNOWN_KERNEL") != std::string::npos);
  // A job no executor can run: infeasible.
  wire::JobSpec gpu = FanoutJob("noop", "", 1);
  gpu.mutable_template_()->mutable_demand()->set_gpus(1);
  auto infeasible = client.Submit(gpu);
  REQUIRE_FALSE(infeasible.ok());
  CHECK(infeasible.status().message().find("INFEASIBLE") != std::string::npos);
  // Unknown job.
  CHECK_FALSE(client.GetStatus(12345).ok());
  auto id = client.Submit(FanoutJob("noop", "", 2));
  REQUIRE(id.ok());
  REQUIRE(ex.Next(&reply));
  REQUIRE(reply.has_work());
  std::vector<uint64_t> ids;
  for (auto& a : reply.work().assign()) ids.push_back(a.attempt_id());
  ex.Complete(ids);
  auto st = client.Wait(*id);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
}

TEST_CASE("server: a silent executor is declared lost and its work moves") {
  RunningServer rs(/*lost_after_s=*/0.3);
  zmq::context_t ctx;
  ScriptedExecutor a(ctx, rs.server->executor_endpoint());
  a.Register(2);
  wire::SchedulerToExecutor msg;
  REQUIRE(a.Next(&msg));
  Client client(rs.ClientOpts());
  auto id = client.Submit(FanoutJob("sleep", "ms=1", 2));
  REQUIRE(id.ok());
  REQUIRE(a.Next(&msg));
  REQUIRE(msg.work().assign_size() == 2);
  // a goes silent; b joins and keeps heartbeating.
  ScriptedExecutor b(ctx, rs.server->executor_endpoint());
  b.Register(2);
  REQUIRE(b.Next(&msg));
  REQUIRE(msg.has_registered());
  std::vector<uint64_t> ids;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (ids.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    b.Heartbeat();
    if (b.Next(&msg, 0.1) && msg.has_work())
      for (auto& x : msg.work().assign()) ids.push_back(x.attempt_id());
  }
  REQUIRE(ids.size() == 2);
  b.Complete(ids);
  auto st = client.Wait(*id);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  CHECK(st->attempts() == 4);
  // The lost executor's late report is refused: it must register again.
  a.Heartbeat();
  bool told = false;
  while (a.Next(&msg, 1))
    if (msg.has_error() && msg.error().code() == wire::Error::UNKNOWN_EXECUTOR) told = true;
  CHECK(told);
}

TEST_CASE("server: shutting down tells watching clients their jobs were cancelled") {
  auto rs = std::make_unique<RunningServer>();
  zmq::context_t ctx;
  ScriptedExecutor ex(ctx, rs->server->executor_endpoint());
  ex.Register(1);
  wire::SchedulerToExecutor msg;
  REQUIRE(ex.Next(&msg));
  Client client(rs->ClientOpts());
  auto id = client.Submit(FanoutJob("sleep", "ms=100000", 1));
  REQUIRE(id.ok());
  REQUIRE(ex.Next(&msg));
  REQUIRE(msg.work().assign_size() == 1);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    rs.reset();  // stops and joins the server
  });
  auto st = client.Wait(*id);
  stopper.join();
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_CANCELLED);
  CHECK(st->reason() == "scheduler shut down");
  // The executor was told to stop the attempt.
  REQUIRE(ex.Next(&msg));
  REQUIRE(msg.work().cancel_size() == 1);
}

// A status poll answered in the same loop turn as the executor report that
// ended the job used to overtake that turn's streamed results: Wait saw the
// final state and returned without the last results (CI, train_logistic:
// a speed-shares round summed three of its four gradients). Wait polls as
// fast as it can here, so the poll often lands in that turn.
TEST_CASE("server: streamed results always reach a waiting client before the final status") {
  ServerOptions o = TestOptions();
  std::string dir;
  SECTION("in memory") {}
  SECTION("journaled: replies and pushes held until the group commit") {
    dir = (std::filesystem::temp_directory_path() / ("tc_order_" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(dir);
    o.state_dir = dir;
  }
  {
    OneExecutorCluster c(o, 4);
    std::atomic<bool> done{false};
    std::thread executor([&] {
      wire::SchedulerToExecutor msg;
      while (!done.load()) {
        if (!c.ex.Next(&msg, 0.1) || !msg.has_work()) continue;
        std::vector<uint64_t> ids;
        for (auto& a : msg.work().assign()) ids.push_back(a.attempt_id());
        if (!ids.empty()) c.ex.Complete(ids);
      }
    });
    struct Join {  // a failed REQUIRE must not leave a joinable thread behind
      std::atomic<bool>& done;
      std::thread& t;
      ~Join() {
        done = true;
        t.join();
      }
    } join{done, executor};
    int short_rounds = 0, repeats = 0;
    for (int round = 0; round < 200; ++round) {
      wire::JobSpec job = FanoutJob("noop", "", 4);
      job.set_return_outputs(true);
      job.set_stream_results(true);
      auto id = c.client->Submit(job);
      REQUIRE(id.ok());
      std::set<uint32_t> seen;
      WaitOptions wo;
      wo.progress_interval_s = 0;
      // The submit's watch and Wait's own both push each result.
      wo.on_result = [&](const wire::TaskResult& r) { repeats += !seen.insert(r.task_index()).second; };
      auto st = c.client->Wait(*id, wo);
      REQUIRE(st.ok());
      REQUIRE(st->state() == wire::JOB_SUCCEEDED);
      short_rounds += seen.size() != 4;
    }
    CHECK(short_rounds == 0);
    CHECK(repeats <= 200 * 4);  // at most once more each
  }
  if (!dir.empty()) std::filesystem::remove_all(dir);
}

TEST_CASE("server: a job's trace is its committed attempts, held in a bounded ring, for its owner only") {
  ServerOptions o = TestOptions();
  o.trace_memory_rows = 6;
  OneExecutorCluster c(o, 8);
  auto run = [&](uint32_t tasks) {
    auto id = c.client->Submit(FanoutJob("noop", "", tasks));
    REQUIRE(id.ok());
    wire::SchedulerToExecutor msg;
    for (uint32_t done = 0; done < tasks;) {
      REQUIRE(c.ex.Next(&msg));
      std::vector<uint64_t> ids;
      for (auto& a : msg.work().assign()) ids.push_back(a.attempt_id());
      c.ex.Complete(ids);
      done += static_cast<uint32_t>(ids.size());
    }
    REQUIRE(c.client->Wait(*id).ok());
    return *id;
  };
  const JobId first = run(4);
  auto t = c.client->Trace(first);
  REQUIRE(t.ok());
  CHECK(t->state() == wire::JOB_SUCCEEDED);
  CHECK(t->committed() == 4);
  CHECK(t->ring_rows() == 6);
  REQUIRE(t->attempts_size() == 4);
  std::set<uint32_t> tasks;
  for (const wire::TraceAttempt& a : t->attempts()) {
    tasks.insert(a.task());
    CHECK(a.executor() > 0);
    CHECK(a.task_class() == "noop");
    CHECK(a.end_s() >= a.start_s());
    CHECK(a.end_s() - a.start_s() == Approx(0.001));  // the executor-measured run time
  }
  CHECK(tasks.size() == 4);

  // Four more rows: the ring of six keeps two of the first job's.
  const JobId second = run(4);
  t = c.client->Trace(first);
  REQUIRE(t.ok());
  CHECK(t->attempts_size() == 2);
  CHECK(t->committed() == 4);
  auto second_trace = c.client->Trace(second);
  REQUIRE(second_trace.ok());
  CHECK(second_trace->attempts_size() == 4);

  ClientOptions other = c.rs.ClientOpts();
  other.user = "mallory";
  auto denied = Client(other).Trace(second);
  REQUIRE_FALSE(denied.ok());
  CHECK(denied.status().message().find("not your job") != std::string::npos);
  CHECK_FALSE(c.client->Trace(999).ok());
}

// Issue #11: many fast jobs finishing in one loop turn, with a small
// job_retention, evicted some before their watchers were told; the final
// status of an evicted job was read anyway and the scheduler died.
TEST_CASE("server: jobs evicted by job_retention in the turn they finish still reach their watchers") {
  ServerOptions o = TestOptions();
  o.core.job_retention = 2;
  OneExecutorCluster c(o, 64);
  Client& client = *c.client;
  wire::SchedulerToExecutor msg;
  constexpr int kJobs = 20;
  std::vector<JobId> ids;
  for (int i = 0; i < kJobs; ++i) {
    wire::JobSpec job = FanoutJob("noop", "", 1);
    job.set_stream_results(true);  // each submit is a watcher of its job
    auto id = client.Submit(job);
    REQUIRE(id.ok());
    ids.push_back(*id);
  }
  std::vector<uint64_t> attempts;
  while (attempts.size() < kJobs && c.ex.Next(&msg))
    for (auto& a : msg.work().assign()) attempts.push_back(a.attempt_id());
  REQUIRE(attempts.size() == kJobs);
  c.ex.Complete(attempts);  // one Report: every job finishes in the same turn
  // The last job is still retained; the scheduler must still be serving.
  auto st = client.Wait(ids.back());
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  // An evicted job reads as unknown, not as a crash.
  auto gone = client.GetStatus(ids.front());
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.status().code() == Status::Code::kNotFound);
}

TEST_CASE("server: cancelling with job_retention = 0 answers with the final status") {
  ServerOptions o = TestOptions();
  o.core.job_retention = 0;
  OneExecutorCluster c(o, 4);
  Client& client = *c.client;
  for (int i = 0; i < 5; ++i) {
    auto id = client.Submit(FanoutJob("sleep", "ms=100000", 1));
    REQUIRE(id.ok());
    auto st = client.Cancel(*id);
    REQUIRE(st.ok());
    CHECK(st->state() == wire::JOB_CANCELLED);
    CHECK(st->job_id() == *id);
  }
  CHECK(client.Executors().ok());  // still serving
}

// Client::SubmitAndWait (SubmitJob.watch): the submit watches the job, the
// final status is pushed. Polls are set 100 s apart, so the status can only
// have come from the push; it is the job's true end, failed included.
TEST_CASE("server: a submit that waits returns the job's final status, succeeded or failed, from the push") {
  OneExecutorCluster c(TestOptions(), 4);
  WaitOptions w;
  w.progress_interval_s = 100;
  w.timeout_s = 5;
  std::vector<wire::JobStatus> seen;  // on_progress
  w.on_progress = [&](const wire::JobStatus& s) { seen.push_back(s); };
  auto run = [&](const wire::JobSpec& spec, wire::AttemptResult::Outcome outcome) {
    seen.clear();
    StatusOr<wire::JobStatus> result = Status::Internal("not run");
    std::thread waiter([&] { result = c.client->SubmitAndWait(spec, w); });
    wire::SchedulerToExecutor msg;
    bool got = c.ex.Next(&msg) && msg.work().assign_size() == 1;
    if (got) {
      wire::ExecutorMessage m;
      m.set_version(kProtocolVersion);
      auto* r = m.mutable_report()->add_results();
      r->set_attempt_id(msg.work().assign(0).attempt_id());
      r->set_outcome(outcome);
      r->set_error(outcome == wire::AttemptResult::FAILED ? "kernel said no" : "");
      r->set_output("out");
      c.ex.Send(m);
    }
    waiter.join();
    REQUIRE(got);
    return result;
  };
  auto ok = run(FanoutJob("noop", "", 1), wire::AttemptResult::OK);
  REQUIRE(ok.ok());
  CHECK(ok->state() == wire::JOB_SUCCEEDED);
  CHECK(ok->committed() == 1);
  CHECK(ok->tasks() == 1);
  REQUIRE(!seen.empty());
  CHECK(seen.front().job_id() == ok->job_id());  // the first progress: the accepted job
  CHECK(seen.back().state() == wire::JOB_SUCCEEDED);

  wire::JobSpec failing = FanoutJob("noop", "", 1);
  failing.set_max_attempts(1);
  auto failed = run(failing, wire::AttemptResult::FAILED);
  REQUIRE(failed.ok());
  CHECK(failed->state() == wire::JOB_FAILED);
  CHECK(failed->job_id() != ok->job_id());
  CHECK(failed->failed_attempts() == 1);
  CHECK(failed->committed() == 0);
  CHECK(failed->reason().find("kernel said no") != std::string::npos);
  // The status the scheduler holds says the same.
  auto held = c.client->GetStatus(failed->job_id());
  REQUIRE(held.ok());
  CHECK(held->state() == wire::JOB_FAILED);
  CHECK(held->reason() == failed->reason());
}
