#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tailcut/wire/executor_session.h"
#include "tailcut/wire/wire.h"

using namespace tailcut;

TEST_CASE("protobuf messages round-trip through a zmq frame") {
  wire::ClientRequest req;
  req.set_version(kProtocolVersion);
  req.set_request_id(42);
  auto* job = req.mutable_submit()->mutable_job();
  job->set_name("fanout");
  job->mutable_template_()->set_kernel("noop");
  job->set_template_count(1000);
  job->mutable_rule()->set_kind(wire::CompletionRule::K_OF_N);
  job->mutable_rule()->set_k(800);
  zmq::message_t frame = ToFrame(req);
  wire::ClientRequest back;
  REQUIRE(FromFrame(frame, &back));
  CHECK(back.request_id() == 42);
  CHECK(back.submit().job().template_count() == 1000);
  CHECK(back.submit().job().rule().k() == 800);
  CHECK(back.submit().job().template_().kernel() == "noop");

  wire::ExecutorMessage em;
  em.set_version(kProtocolVersion);
  auto* r = em.mutable_report()->add_results();
  r->set_attempt_id(7);
  r->set_outcome(wire::AttemptResult::FAILED);
  r->set_error("boom");
  wire::ExecutorMessage em2;
  REQUIRE(FromFrame(ToFrame(em), &em2));
  CHECK(em2.report().results(0).error() == "boom");
}

TEST_CASE("garbage bytes are rejected, not crashed on") {
  const char junk[] = "\xff\xff\xff\xff\x0f garbage";
  zmq::message_t frame(junk, sizeof junk);
  wire::ClientRequest req;
  CHECK_FALSE(FromFrame(frame, &req));
}

TEST_CASE("endpoints are validated") {
  CHECK(ValidateEndpoint("tcp://127.0.0.1:5555").ok());
  CHECK(ValidateEndpoint("tcp://*:5555").ok());
  CHECK(ValidateEndpoint("tcp://127.0.0.1:*").ok());
  CHECK(ValidateEndpoint("ipc:///tmp/x").ok());
  CHECK_FALSE(ValidateEndpoint("127.0.0.1:5555").ok());
  CHECK_FALSE(ValidateEndpoint("tcp://host").ok());
  CHECK_FALSE(ValidateEndpoint("tcp://host:99999").ok());
  CHECK_FALSE(ValidateEndpoint("tcp://host:ab").ok());
}

// A scheduler killed after reading a Report but before its journal
// committed the result would run the task again (a side effect twice): the
// session's next Register carries the results it sent lately again.
TEST_CASE("executor session: a Register after a lost scheduler carries the results sent lately") {
  zmq::context_t ctx;
  zmq::socket_t sched(ctx, zmq::socket_type::router);
  sched.set(zmq::sockopt::linger, 0);
  sched.bind("tcp://127.0.0.1:*");
  SessionOptions o;
  o.endpoint = sched.get(zmq::sockopt::last_endpoint);
  o.name = "t";
  o.watch_handshake = false;
  o.heartbeat_ms = 100;
  o.lost_after_ms = 300;
  ExecutorSession::Hooks hooks;
  hooks.offer = [](wire::Register*) { return true; };
  hooks.work = [](wire::Work*) {};
  hooks.report = [](wire::Report*, bool) {};
  ExecutorSession s(o, ctx, hooks);
  REQUIRE(s.Connect().ok());
  std::string route;
  double now = 0;
  auto take = [&](wire::ExecutorMessage* m) {  // the next message at the scheduler, within 5 s
    zmq::pollitem_t item{sched.handle(), 0, ZMQ_POLLIN, 0};
    for (int i = 0; i < 500; ++i) {
      s.OnWritable(now);  // a Register waits for the connection
      if (zmq::poll(&item, 1, std::chrono::milliseconds(10)) == 0) continue;
      zmq::message_t id, body;
      (void)sched.recv(id);
      (void)sched.recv(body);
      route.assign(static_cast<const char*>(id.data()), id.size());
      return FromFrame(body, m);
    }
    return false;
  };
  s.Tick(now);
  wire::ExecutorMessage m;
  REQUIRE(take(&m));
  REQUIRE(m.has_register_());
  CHECK(m.register_().undelivered_size() == 0);
  wire::SchedulerToExecutor ack;
  ack.set_version(kProtocolVersion);
  ack.mutable_registered()->set_executor_id(7);
  sched.send(zmq::buffer(route), zmq::send_flags::sndmore);
  sched.send(ToFrame(ack), zmq::send_flags::none);
  for (int i = 0; i < 500 && !s.registered(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    s.OnReadable(now);
  }
  REQUIRE(s.registered());
  wire::AttemptResult r;
  r.set_attempt_id(42);
  r.set_outcome(wire::AttemptResult::OK);
  r.set_output("done");
  s.AddResult(&r);
  s.Flush();
  REQUIRE(take(&m));
  REQUIRE(m.has_report());
  CHECK(m.report().results_size() == 1);
  // The scheduler says nothing more (killed): past lost_after the session
  // registers again, and the result it already sent goes with it.
  now = 1.0;
  s.Tick(now);
  REQUIRE(take(&m));
  REQUIRE(m.has_register_());
  REQUIRE(m.register_().undelivered_size() == 1);
  CHECK(m.register_().undelivered(0).attempt_id() == 42);
  CHECK(m.register_().undelivered(0).output() == "done");
}

TEST_CASE("endpoint lists: a scheduler's replicas, comma-separated") {
  CHECK(SplitEndpoints("tcp://a:1") == std::vector<std::string>{"tcp://a:1"});
  CHECK(SplitEndpoints("tcp://a:1, tcp://b:2 ,tcp://c:3") ==
        std::vector<std::string>{"tcp://a:1", "tcp://b:2", "tcp://c:3"});
  CHECK(ValidateEndpoints("tcp://a:1,tcp://b:2").ok());
  CHECK_FALSE(ValidateEndpoints("tcp://a:1,,tcp://b:2").ok());
  CHECK_FALSE(ValidateEndpoints("tcp://a:1,").ok());
  CHECK_FALSE(ValidateEndpoints("").ok());
  CHECK_FALSE(ValidateEndpoints("tcp://a:1,b:2").ok());
}

// docs/RELIABILITY.md, "Replicas": a session given every replica's
// endpoint follows a follower's NOT_LEADER to the leader it names, and
// moves on from one that is silent, registering with what it holds.
// `n` stand-ins for replicas' executor sockets on loopback; their endpoints
// as a list, and session options for it.
struct StandIns {
  StandIns(zmq::context_t& ctx, int n) {
    for (int i = 0; i < n; ++i) {
      replicas.push_back(std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::router));
      replicas.back()->set(zmq::sockopt::linger, 0);
      replicas.back()->set(zmq::sockopt::router_handover, 1);  // as the scheduler's executor socket
      replicas.back()->bind("tcp://127.0.0.1:*");
      list += (i ? "," : "") + replicas.back()->get(zmq::sockopt::last_endpoint);
    }
    options.endpoint = list;
    options.name = "t";
    options.watch_handshake = false;
    options.heartbeat_ms = 100;
  }
  // The next message at replica i: `step` (the session's turn) before
  // each 10 ms poll, at most `tries` times.
  bool Take(int i, int tries, const std::function<void()>& step, wire::ExecutorMessage* m, std::string* route) {
    zmq::pollitem_t item{replicas[i]->handle(), 0, ZMQ_POLLIN, 0};
    for (int k = 0; k < tries; ++k) {
      step();
      if (zmq::poll(&item, 1, std::chrono::milliseconds(10)) == 0) continue;
      zmq::message_t id, body;
      (void)replicas[i]->recv(id);
      (void)replicas[i]->recv(body);
      route->assign(static_cast<const char*>(id.data()), id.size());
      return FromFrame(body, m);
    }
    return false;
  }
  std::vector<std::unique_ptr<zmq::socket_t>> replicas;
  std::string list;
  SessionOptions options;
};

TEST_CASE("executor session: with replicas it follows NOT_LEADER to the leader and moves on from a silent one") {
  zmq::context_t ctx;
  StandIns stand_ins(ctx, 3);
  auto& replicas = stand_ins.replicas;
  const std::vector<std::string> eps = SplitEndpoints(stand_ins.list);
  SessionOptions o = stand_ins.options;
  o.lost_after_ms = 2000;
  o.register_retry_s = o.max_backoff_s = 0.05;
  ExecutorSession::Hooks hooks;
  hooks.offer = [](wire::Register* r) {
    r->add_running()->set_attempt_id(9);  // an attempt it holds
    return true;
  };
  hooks.work = [](wire::Work*) {};
  hooks.report = [](wire::Report*, bool) {};
  ExecutorSession s(o, ctx, hooks);
  REQUIRE(s.Connect().ok());
  CHECK(s.endpoint() == eps[0]);
  double now = 0;
  // The next message at replica i, within 5 s (1 s of the session's time;
  // the session sends a Register again every 50 ms).
  auto take = [&](int i, wire::ExecutorMessage* m, std::string* route) {
    return stand_ins.Take(
        i, 500,
        [&] {
          s.OnWritable(now);
          s.OnReadable(now);
          s.Tick(now);
          now += 0.002;
        },
        m, route);
  };
  s.Tick(now);
  wire::ExecutorMessage m;
  std::string route;
  REQUIRE(take(0, &m, &route));
  REQUIRE(m.has_register_());
  // Replica 1 follows; replica 3 leads.
  wire::SchedulerToExecutor no;
  no.set_version(kProtocolVersion);
  *no.mutable_error() = MakeError(wire::Error::NOT_LEADER, "replica 1 does not lead");
  no.mutable_error()->set_leader_endpoint(eps[2]);
  replicas[0]->send(zmq::buffer(route), zmq::send_flags::sndmore);
  replicas[0]->send(ToFrame(no), zmq::send_flags::none);
  REQUIRE(take(2, &m, &route));
  REQUIRE(m.has_register_());
  CHECK(s.endpoint() == eps[2]);
  REQUIRE(m.register_().running_size() == 1);
  CHECK(m.register_().running(0).attempt_id() == 9);
  wire::SchedulerToExecutor ack;
  ack.set_version(kProtocolVersion);
  ack.mutable_registered()->set_executor_id(7);
  replicas[2]->send(zmq::buffer(route), zmq::send_flags::sndmore);
  replicas[2]->send(ToFrame(ack), zmq::send_flags::none);
  for (int i = 0; i < 500 && !s.registered(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    s.OnReadable(now);
  }
  REQUIRE(s.registered());
  for (zmq::message_t stale; replicas[0]->recv(stale, zmq::recv_flags::dontwait);) {}  // Registers resent before
  // The leader goes silent: past lost_after the session tries the next
  // one in its list (replica 1 again, after 3), keeping its attempt.
  now += 2.5;
  s.Tick(now);
  CHECK(s.endpoint() == eps[0]);
  REQUIRE(take(0, &m, &route));
  REQUIRE(m.has_register_());
  CHECK(m.register_().running_size() == 1);
}

// A move away from a live replica: the first Register reaches the next one,
// no resend needed. With disconnect + connect on one ZMQ_IMMEDIATE socket
// it went into the closing connection and was lost, and with the loss
// timeout no longer than the resend interval (the replica soak's executors:
// 1 s each) every move lost it: a new leader saw no executor for 10 s.
TEST_CASE("executor session: the Register after a move from a live replica is not lost") {
  zmq::context_t ctx;
  StandIns stand_ins(ctx, 2);
  auto& replicas = stand_ins.replicas;
  SessionOptions o = stand_ins.options;
  o.lost_after_ms = 10000;
  o.register_retry_s = o.max_backoff_s = 1000;  // no resend within the test: the first copy must arrive
  ExecutorSession::Hooks hooks;
  hooks.offer = [](wire::Register*) { return true; };
  hooks.work = [](wire::Work*) {};
  hooks.report = [](wire::Report*, bool) {};
  for (int round = 0; round < 30; ++round) {
    INFO("round " << round);
    ExecutorSession s(o, ctx, hooks);
    REQUIRE(s.Connect().ok());
    const double now = 0;
    auto take = [&](int i, std::string* route) {
      wire::ExecutorMessage m;
      return stand_ins.Take(
                 i, 200,
                 [&] {
                   s.OnWritable(now);
                   s.OnReadable(now);
                 },
                 &m, route) &&
             m.has_register_();
    };
    s.Tick(now);
    std::string route;
    REQUIRE(take(0, &route));  // connected to replica 1, which follows and names replica 2
    wire::SchedulerToExecutor no;
    no.set_version(kProtocolVersion);
    *no.mutable_error() = MakeError(wire::Error::NOT_LEADER, "replica 1 does not lead");
    no.mutable_error()->set_leader_endpoint(SplitEndpoints(stand_ins.list)[1]);
    replicas[0]->send(zmq::buffer(route), zmq::send_flags::sndmore);
    replicas[0]->send(ToFrame(no), zmq::send_flags::none);
    CHECK(take(1, &route));
  }
}

// A leader deposed while stopped (SIGSTOP) answers the Registers queued to
// it before it hears of the new term. An executor that has heard the new
// leader's term ignores its RegisterAck and Work (docs/PROTOCOL.md,
// "Terms"), unless only such answers come for three loss timeouts: then
// the replica group was made anew, with terms from 1 again.
TEST_CASE("executor session: a RegisterAck or Work from a lower term than one seen is ignored") {
  zmq::context_t ctx;
  StandIns stand_ins(ctx, 2);  // replica 1 leads in term 5; replica 2 was deposed in term 4
  auto& replicas = stand_ins.replicas;
  SessionOptions o = stand_ins.options;
  o.lost_after_ms = 2000;
  o.register_retry_s = o.max_backoff_s = 0.05;
  std::vector<uint64_t> work;  // the attempts of the Work the hook got
  ExecutorSession::Hooks hooks;
  hooks.offer = [](wire::Register*) { return true; };
  hooks.work = [&](wire::Work* w) {
    for (const wire::Assignment& a : w->assign()) work.push_back(a.attempt_id());
  };
  hooks.report = [](wire::Report*, bool) {};
  ExecutorSession s(o, ctx, hooks);
  REQUIRE(s.Connect().ok());
  double now = 0;
  auto step = [&] {
    s.OnWritable(now);
    s.OnReadable(now);
    s.Tick(now);
    now += 0.002;
  };
  auto send = [&](int i, const std::string& route, uint64_t term, bool ack, AttemptId attempt) {
    wire::SchedulerToExecutor m;
    m.set_version(kProtocolVersion);
    if (ack) {
      m.mutable_registered()->set_executor_id(7);
      m.mutable_registered()->set_term(term);
    } else {
      m.mutable_work()->add_assign()->set_attempt_id(attempt);
      m.mutable_work()->set_term(term);
    }
    replicas[i]->send(zmq::buffer(route), zmq::send_flags::sndmore);
    replicas[i]->send(ToFrame(m), zmq::send_flags::none);
  };
  // Pumps the session's reading for about 0.5 s of real time, without
  // advancing its clock (nothing times out meanwhile).
  auto read = [&] {
    for (int i = 0; i < 50; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      s.OnReadable(now);
    }
  };
  std::string route;
  // Replica i takes the session's Register and answers it from `term`: an
  // ack, then Work with `attempt`.
  auto answer = [&](int i, uint64_t term, AttemptId attempt) {
    wire::ExecutorMessage m;
    REQUIRE(stand_ins.Take(i, 500, step, &m, &route));
    REQUIRE(m.has_register_());
    send(i, route, term, true, 0);
    send(i, route, term, false, attempt);
    read();
  };
  s.Tick(now);
  answer(0, 5, 1);
  REQUIRE(s.registered());
  CHECK(s.term_seen() == 5);
  CHECK(work == std::vector<uint64_t>{1});

  // The leader goes silent; the session moves to replica 2, which still
  // thinks it leads in term 4: its ack and Work are ignored.
  for (zmq::message_t stale; replicas[0]->recv(stale, zmq::recv_flags::dontwait);) {}
  now += 2.5;
  s.Tick(now);
  answer(1, 4, 2);
  CHECK_FALSE(s.registered());
  CHECK(work == std::vector<uint64_t>{1});
  CHECK(s.stale_ignored() == 2);
  CHECK(s.term_seen() == 5);

  // Only term 4 answers for three loss timeouts: a new group. Taken.
  now += 3 * 2.0 + 0.1;
  send(1, route, 4, true, 0);
  read();
  CHECK(s.registered());
  CHECK(s.term_seen() == 4);
  send(1, route, 4, false, 3);
  send(1, route, 0, false, 4);  // a single scheduler's Work carries no term
  read();
  CHECK(work == std::vector<uint64_t>{1, 3, 4});
}
