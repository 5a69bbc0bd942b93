// The scheduler daemon over real ZeroMQ sockets on loopback, with a
// scripted executor (a raw DEALER) so every message is under the test's
// control: registration, batched work, results, bad input, loss.
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "tailcut/client/client.h"
#include "tailcut/predictors/trace.h"
#include "tailcut/server/journal.h"
#include "tailcut/server/server.h"
#include "tailcut/wire/wire.h"

using namespace tailcut;

namespace {

// Loopback endpoints, fast heartbeats; `tweak` adjusts the rest.
ServerOptions TestOptions(double lost_after_s = 1.0) {
  ServerOptions o;
  o.executor_endpoint = "tcp://127.0.0.1:*";
  o.client_endpoint = "tcp://127.0.0.1:*";
  o.heartbeat_ms = 50;
  o.core.lost_after_s = lost_after_s;
  return o;
}

struct RunningServer {
  explicit RunningServer(double lost_after_s = 1.0) : RunningServer(TestOptions(lost_after_s)) {}
  explicit RunningServer(const ServerOptions& o) {
    server = std::make_unique<SchedulerServer>(o);
    REQUIRE(server->Bind().ok());
    thread = std::thread([this] { server->Run(); });
  }
  ~RunningServer() {
    server->Stop();
    thread.join();
  }
  ClientOptions ClientOpts() const {
    ClientOptions c;
    c.endpoint = server->client_endpoint();
    c.timeout_s = 5;
    return c;
  }
  std::unique_ptr<SchedulerServer> server;
  std::thread thread;
};

// A hand-driven executor.
struct ScriptedExecutor {
  ScriptedExecutor(zmq::context_t& ctx, const std::string& endpoint) : sock(ctx, zmq::socket_type::dealer) {
    sock.set(zmq::sockopt::linger, 0);
    sock.connect(endpoint);
  }
  void Send(const wire::ExecutorMessage& m) { sock.send(ToFrame(m), zmq::send_flags::none); }
  void Register(uint32_t slots, std::vector<std::string> kernels = {"noop", "sleep"}) {
    wire::ExecutorMessage m;
    m.set_version(kProtocolVersion);
    m.mutable_register_()->set_name("scripted");
    m.mutable_register_()->set_cpu_slots(slots);
    for (auto& k : kernels) {
      m.mutable_register_()->add_kernels(k);
      if (k == "noop" || k == "sleep") m.mutable_register_()->add_idempotent_kernels(k);  // as the real executor says
    }
    Send(m);
  }
  // Next message that is not a heartbeat; false after `seconds`.
  bool Next(wire::SchedulerToExecutor* out, double seconds = 5) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      zmq::pollitem_t item{sock.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(50));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      zmq::message_t f;
      (void)sock.recv(f);
      REQUIRE(FromFrame(f, out));
      if (!out->has_heartbeat()) return true;
    }
    return false;
  }
  void Heartbeat() {
    wire::ExecutorMessage m;
    m.set_version(kProtocolVersion);
    m.mutable_report();
    Send(m);
  }
  void Complete(const std::vector<uint64_t>& attempts) {
    wire::ExecutorMessage m;
    m.set_version(kProtocolVersion);
    for (uint64_t a : attempts) {
      auto* r = m.mutable_report()->add_results();
      r->set_attempt_id(a);
      r->set_outcome(wire::AttemptResult::OK);
      r->set_output("done " + std::to_string(a));
      r->set_run_s(0.001);
    }
    Send(m);
  }
  zmq::socket_t sock;
};

// A server with one registered scripted executor and a client.
struct OneExecutorCluster {
  explicit OneExecutorCluster(const ServerOptions& o, uint32_t slots) : rs(o), ex(ctx, rs.server->executor_endpoint()) {
    ex.Register(slots);
    wire::SchedulerToExecutor msg;
    REQUIRE(ex.Next(&msg));
    REQUIRE(msg.has_registered());
    client = std::make_unique<Client>(rs.ClientOpts());
  }
  RunningServer rs;
  zmq::context_t ctx;
  ScriptedExecutor ex;
  std::unique_ptr<Client> client;
};

// Registers `ex` with `slots`, submits `spec` through `client`, and returns
// the job's id, with the executor's first work for it in `*work`.
JobId RegisterAndSubmit(ScriptedExecutor& ex, uint32_t slots, Client& client, const wire::JobSpec& spec,
                        wire::SchedulerToExecutor* work) {
  ex.Register(slots);
  REQUIRE(ex.Next(work));  // the acknowledgement
  auto submitted = client.Submit(spec);
  REQUIRE(submitted.ok());
  REQUIRE(ex.Next(work));
  return *submitted;
}

}  // namespace

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

// ------------------------------------------------------------ limits --
// Issue #11: caps answer BUSY (frees up later) or TOO_LARGE (never fits),
// with the limit in the message.

TEST_CASE("server: a 50M-task template is TOO_LARGE, naming the cap, and nothing is kept") {
  OneExecutorCluster c(TestOptions(), 4);
  auto big = c.client->Submit(FanoutJob("noop", "", 50'000'000));
  REQUIRE_FALSE(big.ok());
  CHECK(big.status().code() == Status::Code::kTooLarge);
  CHECK(big.status().message() == "job has 50000000 tasks; the limit is 1000000 (core.max_tasks_per_job) [TOO_LARGE]");
  CHECK(c.client->Submit(FanoutJob("noop", "", 1)).ok());
}

TEST_CASE("server: running jobs per owner, queued tasks and watchers per client are BUSY over their caps") {
  ServerOptions o = TestOptions();
  o.max_jobs_per_owner = 3;
  o.max_watchers_per_client = 1;
  o.core.max_queued_tasks = 10;
  OneExecutorCluster c(o, 1);
  Client& client = *c.client;
  std::vector<JobId> ids;
  for (int i = 0; i < 3; ++i) {
    auto id = client.Submit(FanoutJob("sleep", "ms=100000", 1));
    REQUIRE(id.ok());
    ids.push_back(*id);
  }
  auto busy = client.Submit(FanoutJob("sleep", "ms=100000", 1));
  REQUIRE_FALSE(busy.ok());
  CHECK(busy.status().code() == Status::Code::kResourceExhausted);
  CHECK(busy.status().message() ==
        "this owner already has 3 running jobs (scheduler.max_jobs_per_owner = 3); retry later [BUSY]");
  // Another client is another owner (until jobs are owned by keys), but
  // the queued-task cap is shared.
  Client other(c.rs.ClientOpts());
  auto queued = other.Submit(FanoutJob("sleep", "ms=100000", 8));
  REQUIRE_FALSE(queued.ok());
  CHECK(queued.status().message().find("(core.max_queued_tasks)") != std::string::npos);
  CHECK(queued.status().message().find("[BUSY]") != std::string::npos);
  // A cancelled job frees its owner's place.
  REQUIRE(client.Cancel(ids[0]).ok());
  wire::JobSpec streamed = FanoutJob("sleep", "ms=100000", 1);
  streamed.set_stream_results(true);  // a watcher
  auto watched = client.Submit(streamed);
  REQUIRE(watched.ok());
  // One watcher per client: a Wait on another job is refused at once.
  auto wait = client.Wait(ids[1]);
  REQUIRE_FALSE(wait.ok());
  CHECK(wait.status().message() ==
        "this client already watches 1 jobs (scheduler.max_watchers_per_client = 1); retry later [BUSY]");
  // Its job finishing frees the watcher.
  REQUIRE(client.Cancel(*watched).ok());
  REQUIRE(client.Cancel(ids[2]).ok());
  WaitOptions brief;
  brief.timeout_s = 0.3;
  auto waited = client.Wait(ids[1], brief);
  CHECK(waited.status().code() == Status::Code::kUnavailable);  // still running: the watch was taken
}

TEST_CASE("server: executors beyond max_executors are refused with BUSY until one leaves") {
  ServerOptions o = TestOptions();
  o.max_executors = 1;
  OneExecutorCluster c(o, 2);
  ScriptedExecutor second(c.ctx, c.rs.server->executor_endpoint());
  second.Register(2);
  wire::SchedulerToExecutor msg;
  REQUIRE(second.Next(&msg));
  REQUIRE(msg.has_error());
  CHECK(msg.error().code() == wire::Error::BUSY);
  CHECK(msg.error().message() == "1 executors are registered (scheduler.max_executors = 1); retry later");
  // The first one registering again is not a new executor.
  c.ex.Register(4);
  REQUIRE(c.ex.Next(&msg));
  CHECK(msg.has_registered());
  wire::ExecutorMessage bye;
  bye.set_version(kProtocolVersion);
  bye.mutable_goodbye()->set_reason("done");
  c.ex.Send(bye);
  second.Register(2);
  REQUIRE(second.Next(&msg));
  CHECK(msg.has_registered());
}

TEST_CASE("server: ListExecutors answers in pages that the client follows, and counts the fleet") {
  OneExecutorCluster c(TestOptions(), 1);
  std::vector<std::unique_ptr<ScriptedExecutor>> more;
  for (int i = 0; i < 4; ++i) {
    more.push_back(std::make_unique<ScriptedExecutor>(c.ctx, c.rs.server->executor_endpoint()));
    more.back()->Register(1);
    wire::SchedulerToExecutor msg;
    REQUIRE(more.back()->Next(&msg));
    REQUIRE(msg.has_registered());
  }
  auto count = c.client->ExecutorCount();
  REQUIRE(count.ok());
  CHECK(*count == 5);
  auto paged = c.client->Executors(/*page=*/2);  // three pages
  REQUIRE(paged.ok());
  std::set<uint64_t> ids;
  for (auto& e : *paged) ids.insert(e.executor_id());
  CHECK(paged->size() == 5);
  CHECK(ids.size() == 5);
}

TEST_CASE("server: NaN, infinite and absurd numbers from an executor are capped or ignored") {
  OneExecutorCluster c(TestOptions(), 1);
  // A Register claiming 4 billion slots and 100 GPUs is capped.
  c.ex.Register(4'000'000'000u);
  wire::SchedulerToExecutor msg;
  REQUIRE(c.ex.Next(&msg));
  REQUIRE(msg.has_registered());
  auto execs = c.client->Executors();
  REQUIRE(execs.ok());
  REQUIRE(execs->size() == 1);
  CHECK(execs->at(0).cpu_slots() == 65536);
  auto id = c.client->Submit(FanoutJob("noop", "", 3));
  REQUIRE(id.ok());
  std::vector<uint64_t> attempts;
  while (attempts.size() < 3 && c.ex.Next(&msg))
    for (auto& a : msg.work().assign()) attempts.push_back(a.attempt_id());
  REQUIRE(attempts.size() == 3);
  wire::ExecutorMessage m;
  m.set_version(kProtocolVersion);
  const double bad[] = {std::nan(""), INFINITY, -5};
  for (size_t i = 0; i < attempts.size(); ++i) {
    auto* p = m.mutable_report()->add_progress();
    p->set_attempt_id(attempts[i]);
    p->set_fraction(std::nanf(""));
    auto* r = m.mutable_report()->add_results();
    r->set_attempt_id(attempts[i]);
    r->set_outcome(wire::AttemptResult::OK);
    r->set_run_s(bad[i]);
  }
  c.ex.Send(m);
  auto st = c.client->Wait(*id);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  CHECK(st->committed() == 3);
}

TEST_CASE("server: batches are split under max_message_bytes, a reply over it is TOO_LARGE") {
  ServerOptions o = TestOptions();
  o.max_message_bytes = 64 * 1024;
  OneExecutorCluster c(o, 8);
  // A request over the limit never leaves the client (the scheduler would
  // drop the connection instead of answering).
  ClientOptions small = c.rs.ClientOpts();
  small.max_message_bytes = o.max_message_bytes;
  Client client(small);
  wire::JobSpec huge = FanoutJob("noop", std::string(70 * 1024, 'a'), 1);
  auto refused = client.Submit(huge);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == Status::Code::kTooLarge);
  wire::JobSpec job;
  job.set_return_outputs(true);
  for (int i = 0; i < 3; ++i) {
    auto* t = job.add_tasks();
    t->set_kernel("noop");
    t->set_args(std::string(20 * 1024, 'a'));  // 3 x 20 KiB: no single Work fits
  }
  auto id = client.Submit(job);
  REQUIRE(id.ok());
  wire::SchedulerToExecutor msg;
  std::vector<uint64_t> attempts;
  int messages = 0;
  while (attempts.size() < 3 && c.ex.Next(&msg)) {
    CHECK(msg.ByteSizeLong() <= o.max_message_bytes);
    ++messages;
    for (auto& a : msg.work().assign()) attempts.push_back(a.attempt_id());
  }
  REQUIRE(attempts.size() == 3);
  CHECK(messages >= 2);
  for (uint64_t a : attempts) {  // one Report each: 30 KiB fits, 90 KiB would not
    wire::ExecutorMessage m;
    m.set_version(kProtocolVersion);
    auto* r = m.mutable_report()->add_results();
    r->set_attempt_id(a);
    r->set_outcome(wire::AttemptResult::OK);
    r->set_output(std::string(30 * 1024, 'o'));
    c.ex.Send(m);
  }
  auto st = client.Wait(*id);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  auto results = client.Results(*id);
  REQUIRE_FALSE(results.ok());
  CHECK(results.status().code() == Status::Code::kTooLarge);
  CHECK(results.status().message().find("over scheduler.max_message_bytes = 65536") != std::string::npos);
}

// ------------------------------------------------------ the edge tier --
// docs/EDGE.md, "Two tiers": an edge server (scheduler.parent set) under a
// parent server, a scripted executor under the edge.

namespace {

struct EdgeUnderParent {
  explicit EdgeUnderParent(double edge_quorum, uint32_t slots)
      : parent(TestOptions(30)), edge(EdgeOptions(parent, edge_quorum)), ex(ctx, edge.server->executor_endpoint()) {
    ex.Register(slots);
    wire::SchedulerToExecutor msg;
    REQUIRE(ex.Next(&msg));
    REQUIRE(msg.has_registered());
    client = std::make_unique<Client>(parent.ClientOpts());
  }
  static ServerOptions EdgeOptions(const RunningServer& parent, double edge_quorum) {
    ServerOptions o = TestOptions(30);
    o.parent.endpoint = parent.server->executor_endpoint();
    o.parent.name = "edge-1";
    o.parent.heartbeat_ms = 50;
    o.parent.edge_quorum = edge_quorum;
    return o;
  }
  // The edge as the parent lists it, once it offers `slots` slots.
  bool WaitForEdge(uint32_t slots, wire::ExecutorInfo* out) {
    for (int i = 0; i < 200; ++i) {
      auto list = client->Executors();
      if (list.ok() && list->size() == 1 && list->at(0).cpu_slots() == slots) {
        *out = list->at(0);
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  RunningServer parent;
  RunningServer edge;
  zmq::context_t ctx;
  ScriptedExecutor ex;
  std::unique_ptr<Client> client;
};

}  // namespace

TEST_CASE("server: an edge is one executor of its parent with its fleet's slots, and relays the parent's work") {
  EdgeUnderParent c(0, 3);
  wire::ExecutorInfo info;
  REQUIRE(c.WaitForEdge(3, &info));
  CHECK(info.name() == "edge-1");
  CHECK(info.labels().at("tier") == "edge");
  // Another executor joins the edge: it registers again with 5 slots.
  ScriptedExecutor second(c.ctx, c.edge.server->executor_endpoint());
  second.Register(2);
  REQUIRE(c.WaitForEdge(5, &info));

  wire::JobSpec job = FanoutJob("noop", "", 2);
  job.set_return_outputs(true);
  auto id = c.client->Submit(job);
  REQUIRE(id.ok());
  // The edge places the parent's tasks on its own executors; the scripted
  // one or the second gets them.
  std::set<std::string> outputs;
  int done = 0;
  for (int turn = 0; turn < 200 && done < 2; ++turn) {
    for (ScriptedExecutor* x : {&c.ex, &second}) {
      wire::SchedulerToExecutor msg;
      if (!x->Next(&msg, 0.05) || !msg.has_work()) continue;
      std::vector<uint64_t> ids;
      for (auto& a : msg.work().assign()) ids.push_back(a.attempt_id());
      for (uint64_t a : ids) outputs.insert("done " + std::to_string(a));
      x->Complete(ids);
      done += static_cast<int>(ids.size());
    }
  }
  REQUIRE(done == 2);
  auto st = c.client->Wait(*id);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  auto outs = c.client->Results(*id);
  REQUIRE(outs.ok());
  REQUIRE(outs->size() == 2);
  for (auto& r : *outs) CHECK(outputs.count(r.output()) == 1);  // the executor's own output, relayed
}

TEST_CASE("server: an edge runs the parent's share of a divisible job as is") {
  EdgeUnderParent c(0, 3);
  wire::ExecutorInfo info;
  REQUIRE(c.WaitForEdge(3, &info));
  wire::JobSpec job = FanoutJob("noop", "", 3);
  job.set_divisible_units(30);
  auto id = c.client->Submit(job);
  REQUIRE(id.ok());
  uint64_t units = 0;
  int done = 0;
  for (int turn = 0; turn < 100 && done < 3; ++turn) {
    wire::SchedulerToExecutor msg;
    if (!c.ex.Next(&msg, 0.05) || !msg.has_work()) continue;
    std::vector<uint64_t> ids;
    for (auto& a : msg.work().assign()) {
      CHECK(a.share().total() == 30);  // the parent's numbers, through the edge
      units += a.share().count();
      ids.push_back(a.attempt_id());
    }
    c.ex.Complete(ids);
    done += static_cast<int>(ids.size());
  }
  REQUIRE(done == 3);
  CHECK(units == 30);
  auto st = c.client->Wait(*id);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
}

TEST_CASE("server: an edge quorum closes the edge's part and hands the rest back, which the parent runs again") {
  EdgeUnderParent c(0.5, 4);
  wire::ExecutorInfo info;
  REQUIRE(c.WaitForEdge(4, &info));
  auto id = c.client->Submit(FanoutJob("sleep", "ms=1", 4));
  REQUIRE(id.ok());
  std::vector<uint64_t> first, cancelled, again;
  for (int turn = 0; turn < 100 && first.size() < 4; ++turn) {
    wire::SchedulerToExecutor msg;
    if (c.ex.Next(&msg, 0.1) && msg.has_work())
      for (auto& a : msg.work().assign()) first.push_back(a.attempt_id());
  }
  REQUIRE(first.size() == 4);
  // Half of them report: the edge closes its part of the job.
  c.ex.Complete({first[0], first[1]});
  for (int turn = 0; turn < 100 && (cancelled.size() < 2 || again.size() < 2); ++turn) {
    wire::SchedulerToExecutor msg;
    if (!c.ex.Next(&msg, 0.1) || !msg.has_work()) continue;
    for (uint64_t x : msg.work().cancel()) cancelled.push_back(x);
    for (auto& a : msg.work().assign()) again.push_back(a.attempt_id());
  }
  std::sort(cancelled.begin(), cancelled.end());
  CHECK(cancelled == std::vector<uint64_t>{first[2], first[3]});  // the stragglers, stopped here
  REQUIRE(again.size() == 2);  // handed back; the parent placed them again (here: the only edge)
  c.ex.Complete(again);
  auto st = c.client->Wait(*id);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  CHECK(st->attempts() == 6);
  CHECK(st->failed_attempts() == 0);  // a hand-back is not a failure
}

TEST_CASE("server: an edge that restarts cancels the parent's tasks it journaled instead of resuming them") {
  char tmpl[] = "/tmp/tailcut-edge-journal-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  RunningServer parent(TestOptions(30));
  ServerOptions eo = EdgeUnderParent::EdgeOptions(parent, 0);
  eo.state_dir = dir;
  zmq::context_t ctx;
  {
    RunningServer edge(eo);
    ScriptedExecutor ex(ctx, edge.server->executor_endpoint());
    ex.Register(2);
    wire::SchedulerToExecutor msg;
    REQUIRE(ex.Next(&msg));
    REQUIRE(msg.has_registered());
    Client pc(parent.ClientOpts());
    bool seen = false;
    for (int i = 0; i < 200 && !seen; ++i) {
      auto list = pc.Executors();
      seen = list.ok() && list->size() == 1;
      if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    REQUIRE(seen);
    REQUIRE(pc.Submit(FanoutJob("sleep", "ms=1", 1)).ok());
    bool assigned = false;
    for (int i = 0; i < 50 && !assigned; ++i)
      assigned = ex.Next(&msg, 0.1) && msg.has_work() && msg.work().assign_size() == 1;
    REQUIRE(assigned);         // held by the edge, never finished
  }                            // the edge stops; its journal keeps the parent's task as a running job
  { RunningServer edge(eo); }  // restarted: that job is cancelled, not resumed

  auto journal = Journal::Open(JournalOptions{dir + "/journal.db"});
  REQUIRE(journal.ok());
  std::vector<JournaledJob> jobs;
  REQUIRE((*journal)->Load(&jobs).ok());
  REQUIRE(jobs.size() == 1);
  wire::JobSpec spec;
  REQUIRE(spec.ParseFromString(jobs[0].spec));
  CHECK(spec.owner() == "parent:edge-1");
  CHECK(jobs[0].finished);
  CHECK(jobs[0].state == JobState::kCancelled);
  CHECK(jobs[0].reason.find("edge restarted") != std::string::npos);
  journal->reset();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
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
    CHECK(st->attempts() == 0);  // restored: this run launched nothing
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

TEST_CASE("server: without keys, a new stated user per submit is held to max_jobs_per_owner per connection") {
  ServerOptions o = TestOptions();
  o.max_jobs_per_owner = 3;
  OneExecutorCluster c(o, 1);
  zmq::socket_t raw(c.ctx, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.set(zmq::sockopt::rcvtimeo, 5000);
  raw.connect(c.rs.server->client_endpoint());
  std::vector<wire::ClientReply> replies;
  for (int i = 1; i <= 5; ++i) {
    wire::ClientRequest req;
    req.set_version(kProtocolVersion);
    req.set_request_id(static_cast<uint64_t>(i));
    req.set_user("name-" + std::to_string(i));  // a new owner each time
    *req.mutable_submit()->mutable_job() = FanoutJob("sleep", "ms=100000", 1);
    REQUIRE(raw.send(ToFrame(req), zmq::send_flags::none));
    zmq::message_t f;
    REQUIRE(raw.recv(f));
    wire::ClientReply r;
    REQUIRE(FromFrame(f, &r));
    replies.push_back(r);
  }
  for (int i = 0; i < 3; ++i) CHECK(replies[i].has_submitted());
  for (int i = 3; i < 5; ++i) {
    REQUIRE(replies[i].has_error());
    CHECK(replies[i].error().code() == wire::Error::BUSY);
    CHECK(replies[i].error().message().find("this connection already has 3 running jobs") != std::string::npos);
  }
  // Another connection has its own count.
  CHECK(c.client->Submit(FanoutJob("sleep", "ms=100000", 1)).ok());
}
