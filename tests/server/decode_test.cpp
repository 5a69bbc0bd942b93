// Issue 43: one peer's 16 MiB frame of millions of empty messages must not
// hold up another executor's heartbeats (docs/LIMITS.md, "Decoding off the
// loop"). The real server on loopback with /metrics; an honest executor
// heartbeats every 10 ms while a rogue executor and a rogue client each send
// such a frame. What the test asserts is what the scheduler records itself:
// no turn of its loop took over 100 ms of its thread's CPU time
// (tailcut_loop_turn_cpu_seconds) while the frames were decoded, which a
// loaded machine does not blur, and the frames were decoded off the loop
// (tailcut_frames_decoded_off_loop_total). The honest executor's heartbeats
// are answered meanwhile, and the longest wait it saw between answers is
// printed (wall time: on a busy machine it says as much about the machine).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../integration/metrics_scrape.h"
#include "server_fixture.h"

using namespace tailcut;
using Steady = std::chrono::steady_clock;

namespace {

constexpr size_t kFrameBytes = 16u << 20;

std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string Field(int number, const std::string& payload) {
  return Varint(static_cast<uint64_t>(number) << 3 | 2) + Varint(payload.size()) + payload;
}
// `bytes` of empty messages in field `number` (2 bytes each).
std::string Empties(int number, size_t bytes) {
  std::string tag = Varint(static_cast<uint64_t>(number) << 3 | 2) + std::string(1, '\0');
  std::string out;
  out.reserve(bytes);
  while (out.size() + tag.size() <= bytes) out += tag;
  return out;
}
std::string Version() { return Varint(1u << 3 | 0) + Varint(kProtocolVersion); }

// Loop turns that took more than 100 ms of CPU so far.
double LongTurns(std::map<std::string, double>& m) {
  return m["tailcut_loop_turn_cpu_seconds_count"] - m["tailcut_loop_turn_cpu_seconds_bucket{le=\"0.1\"}"];
}

ServerOptions WithMetrics() {
  // Executors lost after 1 s: heartbeats answered at most every 200 ms (AnswerReport).
  ServerOptions o = server_test::TestOptions(1.0);
  o.http_listen = "127.0.0.1:0";
  return o;
}

// Registers, then sends an empty Report (a heartbeat) every 10 ms and
// notes when each answer from the scheduler arrives.
struct HonestExecutor {
  explicit HonestExecutor(const std::string& endpoint) : sock(ctx, zmq::socket_type::dealer) {
    sock.set(zmq::sockopt::linger, 0);
    sock.connect(endpoint);
    wire::ExecutorMessage m;
    m.set_version(kProtocolVersion);
    m.mutable_register_()->set_name("honest");
    m.mutable_register_()->set_cpu_slots(1);
    sock.send(ToFrame(m), zmq::send_flags::none);
    thread = std::thread([this] { Run(); });
  }
  ~HonestExecutor() {
    stop = true;
    thread.join();
  }
  void Run() {
    wire::ExecutorMessage hb;
    hb.set_version(kProtocolVersion);
    hb.mutable_report();
    while (!stop) {
      sock.send(ToFrame(hb), zmq::send_flags::none);
      zmq::pollitem_t item{sock.handle(), 0, ZMQ_POLLIN, 0};
      auto until = Steady::now() + std::chrono::milliseconds(10);
      while (Steady::now() < until) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Steady::now());
        if (zmq::poll(&item, 1, std::max(left, std::chrono::milliseconds(1))) <= 0) continue;
        zmq::message_t frame;
        while (sock.recv(frame, zmq::recv_flags::dontwait)) {
          std::lock_guard<std::mutex> lock(mu);
          answers.push_back(Steady::now());
        }
      }
    }
  }
  std::vector<Steady::time_point> AnswersBetween(Steady::time_point a, Steady::time_point b) {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<Steady::time_point> out;
    for (auto t : answers)
      if (t >= a && t <= b) out.push_back(t);
    return out;
  }
  zmq::context_t ctx;
  zmq::socket_t sock;
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<Steady::time_point> answers;
  std::thread thread;
};

// Sends `frame` on a fresh DEALER to `endpoint` and waits for one answer.
template <class Reply>
bool SendAndWait(const std::string& endpoint, const std::string& frame, Reply* out, int timeout_ms = 60000) {
  zmq::context_t ctx;
  zmq::socket_t sock(ctx, zmq::socket_type::dealer);
  sock.set(zmq::sockopt::linger, 0);
  sock.connect(endpoint);
  sock.send(zmq::buffer(frame), zmq::send_flags::none);
  zmq::pollitem_t item{sock.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms)) <= 0) return false;
  zmq::message_t reply;
  return sock.recv(reply, zmq::recv_flags::dontwait) && FromFrame(reply, out);
}

// Sends submits 1..n on `sock`, request i with tasks(i) noop tasks.
template <class TasksOf>
void SendSubmits(zmq::socket_t& sock, uint64_t n, TasksOf tasks) {
  for (uint64_t id = 1; id <= n; ++id) {
    wire::ClientRequest req;
    req.set_version(kProtocolVersion);
    req.set_request_id(id);
    wire::JobSpec& job = *req.mutable_submit()->mutable_job();
    job.set_name("submit-" + std::to_string(id));
    for (int i = 0; i < tasks(id); ++i) job.add_tasks()->set_kernel("noop-" + std::to_string(i));
    if (tasks(id) >= 20000) REQUIRE(req.ByteSizeLong() > (128u << 10));  // decoded off the loop
    sock.send(ToFrame(req), zmq::send_flags::none);
  }
}

// Reads n answers: in the order sent, each a job made after the one before.
void ExpectSubmittedInOrder(zmq::socket_t& sock, uint64_t n) {
  uint64_t last_job = 0;
  for (uint64_t id = 1; id <= n; ++id) {
    zmq::pollitem_t item{sock.handle(), 0, ZMQ_POLLIN, 0};
    REQUIRE(zmq::poll(&item, 1, std::chrono::seconds(60)) > 0);
    zmq::message_t frame;
    wire::ClientReply r;
    REQUIRE(sock.recv(frame, zmq::recv_flags::dontwait));
    REQUIRE(FromFrame(frame, &r));
    INFO(r.error().message());
    CHECK(r.request_id() == id);  // answered in order ...
    REQUIRE(r.has_submitted());
    CHECK(r.submitted().job_id() > last_job);  // ... and made in order
    last_job = r.submitted().job_id();
  }
}

}  // namespace

TEST_CASE("decode: a peer's 16 MiB frame of millions of empty messages does not hold up another's heartbeats") {
  server_test::RunningServer s(WithMetrics());
  const std::string http = s.server->http_endpoint();
  HonestExecutor honest(s.server->executor_endpoint());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // registered, heartbeating
  auto before = testing::ScrapeMetrics(http);

  // A Report of 8M empty results from an executor, and a submit of one task
  // with 8M empty inputs from a client (its task count is 1: not refused
  // before parsing).
  const std::string report = Version() + Field(wire::ExecutorMessage::kReportFieldNumber,
                                               Empties(wire::Report::kResultsFieldNumber, kFrameBytes));
  const std::string submit = Version() + Varint(wire::ClientRequest::kRequestIdFieldNumber << 3) + Varint(42) +
                             Field(wire::ClientRequest::kSubmitFieldNumber,
                                   Field(wire::SubmitJob::kJobFieldNumber,
                                         Field(wire::JobSpec::kTasksFieldNumber,
                                               Varint(wire::TaskSpec::kKernelFieldNumber << 3 | 2) + Varint(4) +
                                                   "noop" + Empties(wire::TaskSpec::kInputsFieldNumber, kFrameBytes))));
  REQUIRE(report.size() > kFrameBytes - 16);
  REQUIRE(submit.size() > kFrameBytes);

  const auto start = Steady::now();
  wire::ClientReply client_reply;
  std::thread client([&] { CHECK(SendAndWait(s.server->client_endpoint(), submit, &client_reply)); });
  wire::SchedulerToExecutor rogue_reply;
  CHECK(SendAndWait(s.server->executor_endpoint(), report, &rogue_reply));
  const auto rogue_done = Steady::now();
  client.join();
  const auto end = Steady::now();

  // Both were decoded and answered: the rogue is no registered executor, the
  // submit's inputs name no job.
  CHECK(rogue_reply.error().code() == wire::Error::UNKNOWN_EXECUTOR);
  CHECK(client_reply.request_id() == 42);
  CHECK(client_reply.error().code() == wire::Error::INVALID_ARGUMENT);
  CHECK_THAT(client_reply.error().message(), Catch::Contains("job_id 0 is no job"));

  auto after = testing::ScrapeMetrics(http);
  CHECK(after["tailcut_frames_decoded_off_loop_total"] - before["tailcut_frames_decoded_off_loop_total"] >= 2);
  CHECK(LongTurns(after) - LongTurns(before) == 0);  // no turn of the loop over 100 ms of CPU
  std::printf("loop turns during the frames by CPU time:");
  for (const char* le : {"0.01", "0.025", "0.05", "0.1", "0.25", "1", "+Inf"}) {
    const std::string bucket = "tailcut_loop_turn_cpu_seconds_bucket{le=\"" + std::string(le) + "\"}";
    std::printf(" <=%s s: %.0f", le, after[bucket] - before[bucket]);
  }
  std::printf("\n");

  // The honest executor was answered while the rogue's frame was decoded.
  auto during = honest.AnswersBetween(start, rogue_done);
  double longest_ms = 0;
  auto last = start;
  for (auto t : honest.AnswersBetween(start, end)) {
    longest_ms = std::max(longest_ms, std::chrono::duration<double, std::milli>(t - last).count());
    last = t;
  }
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::printf(
      "the rogue executor's answer came after %.0f ms, the rogue client's after %.0f ms; the honest executor got %zu "
      "heartbeat answers before the first, the longest wait between answers %.0f ms (wall)\n",
      ms(rogue_done - start), ms(end - start), during.size(), longest_ms);
  CHECK(during.size() >= 2);
}

TEST_CASE("decode: a peer's frames after a large one are handled in the order it sent them") {
  server_test::RunningServer s;
  zmq::context_t ctx;
  zmq::socket_t sock(ctx, zmq::socket_type::dealer);
  sock.set(zmq::sockopt::linger, 0);
  sock.connect(s.server->client_endpoint());
  // Request 1: a job of 20,000 explicit tasks (~200 KB: decoded off the
  // loop); requests 2-4: one-task jobs right behind it (decoded on the loop
  // if they were taken alone).
  SendSubmits(sock, 4, [](uint64_t id) { return id == 1 ? 20000 : 1; });
  ExpectSubmittedInOrder(sock, 4);
}

TEST_CASE("decode: frames beyond decode_queue_bytes wait in the socket, then are all handled in order") {
  // Room for one ~200 KB frame at a time: the second waits (back-pressure,
  // tailcut_decode_waits_total) until the first is handled, and nothing is
  // dropped or reordered.
  ServerOptions o = WithMetrics();
  o.decode_queue_bytes = 256u << 10;
  server_test::RunningServer s(o);
  const std::string http = s.server->http_endpoint();
  auto before = testing::ScrapeMetrics(http);
  zmq::context_t ctx;
  zmq::socket_t sock(ctx, zmq::socket_type::dealer);
  sock.set(zmq::sockopt::linger, 0);
  sock.connect(s.server->client_endpoint());
  constexpr uint64_t kRequests = 6;
  SendSubmits(sock, kRequests, [](uint64_t) { return 20000; });
  ExpectSubmittedInOrder(sock, kRequests);
  auto after = testing::ScrapeMetrics(http);
  CHECK(after["tailcut_frames_decoded_off_loop_total"] - before["tailcut_frames_decoded_off_loop_total"] == kRequests);
  CHECK(after["tailcut_decode_waits_total"] - before["tailcut_decode_waits_total"] >= 1);
  CHECK(after["tailcut_decode_queue_bytes"] == 0);
}

TEST_CASE("decode: a registered executor's Report of 8 million empty results is refused unwalked") {
  // Its attempts are all it may speak of (kReportEntriesPerAttempt each):
  // walking millions of entries would stall the loop as parsing them did.
  // (Not lost while its frame travels and is parsed.)
  ServerOptions o = server_test::TestOptions(30.0);
  o.http_listen = "127.0.0.1:0";
  server_test::RunningServer s(o);
  const std::string http = s.server->http_endpoint();
  zmq::context_t ctx;
  zmq::socket_t sock(ctx, zmq::socket_type::dealer);
  sock.set(zmq::sockopt::linger, 0);
  sock.connect(s.server->executor_endpoint());
  wire::ExecutorMessage reg;
  reg.set_version(kProtocolVersion);
  reg.mutable_register_()->set_name("rogue");
  reg.mutable_register_()->set_cpu_slots(1);
  sock.send(ToFrame(reg), zmq::send_flags::none);
  zmq::pollitem_t item{sock.handle(), 0, ZMQ_POLLIN, 0};
  REQUIRE(zmq::poll(&item, 1, std::chrono::seconds(10)) > 0);
  zmq::message_t ack;
  REQUIRE(sock.recv(ack, zmq::recv_flags::dontwait));
  auto before = testing::ScrapeMetrics(http);

  const std::string report = Version() + Field(wire::ExecutorMessage::kReportFieldNumber,
                                               Empties(wire::Report::kResultsFieldNumber, kFrameBytes));
  sock.send(zmq::buffer(report), zmq::send_flags::none);
  wire::SchedulerToExecutor reply;
  for (;;) {  // heartbeats may come first
    REQUIRE(zmq::poll(&item, 1, std::chrono::seconds(60)) > 0);
    zmq::message_t frame;
    REQUIRE(sock.recv(frame, zmq::recv_flags::dontwait));
    REQUIRE(FromFrame(frame, &reply));
    if (reply.has_error()) break;
  }
  CHECK(reply.error().code() == wire::Error::INVALID_ARGUMENT);
  CHECK_THAT(reply.error().message(), Catch::Contains("more entries than the attempts it was handed"));
  auto after = testing::ScrapeMetrics(http);
  CHECK(after["tailcut_refusals_total{limit=\"executor.report_entries\"}"] -
            before["tailcut_refusals_total{limit=\"executor.report_entries\"}"] ==
        1);
  CHECK(after["tailcut_reports_refused_total"] == before["tailcut_reports_refused_total"]);  // not walked
  CHECK(LongTurns(after) - LongTurns(before) == 0);
}
