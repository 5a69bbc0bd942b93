#include <catch2/catch.hpp>

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
