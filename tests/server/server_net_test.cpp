// What peers send and get (scheduler/server/net/): caps that answer BUSY or
// TOO_LARGE, bad numbers from executors, batches split under
// max_message_bytes, owners without keys.
#include "server_fixture.h"

using namespace tailcut;
using namespace tailcut::server_test;

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
