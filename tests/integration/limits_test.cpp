// End to end, issue #11 "limits and admission": the real tailcut-scheduler
// refuses an oversized job and a flood with BUSY / TOO_LARGE errors that
// name the cap, survives a burst of fast jobs and cancels with a small
// job_retention, and its memory stays bounded, also against a client that
// never reads its replies. Bounds are on RSS with a wide margin; nothing
// here depends on timing.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "daemon_cluster.h"
#include "tailcut/wire/security.h"
#include "tailcut/wire/wire.h"

using namespace tailcut;

namespace {

#if defined(__SANITIZE_ADDRESS__)
// Under ASan, freed memory waits in a quarantine (256 MiB by default) before
// reuse, so RSS would measure the quarantine, not what the scheduler holds.
// The daemons inherit this environment; keep the caller's other options.
[[maybe_unused]] const bool kSmallQuarantine = [] {
  const char* prior = std::getenv("ASAN_OPTIONS");
  std::string options = prior && *prior ? std::string(prior) + ":" : "";
  return setenv("ASAN_OPTIONS", (options + "quarantine_size_mb=4").c_str(), 1) == 0;
}();
#endif

// A /proc/PID/status memory line ("VmRSS:", "VmHWM:" = the peak) of
// process `pid`, in MiB (0 when unreadable).
double StatusMiB(int pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field, 0) == 0) return std::stod(line.substr(field.size())) / 1024.0;
  return 0;
}
double RssMiB(int pid) { return StatusMiB(pid, "VmRSS:"); }

// One executor of 2 slots; the scheduler with `flags` (after --policy none).
testing::DaemonClusterOptions Opts(std::vector<std::string> flags) {
  testing::DaemonClusterOptions o;
  o.scheduler_flags = {"--policy", "none"};
  o.scheduler_flags.insert(o.scheduler_flags.end(), flags.begin(), flags.end());
  return o;
}

// Submits `job` and waits (at most 120 s) for it to succeed.
void RunToSuccess(Client& client, const wire::JobSpec& job, JobId* id = nullptr) {
  auto submitted = client.Submit(job);
  REQUIRE(submitted.ok());
  if (id) *id = *submitted;
  WaitOptions w;
  w.timeout_s = 120;
  auto st = client.Wait(*submitted, w);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A coded_matmul task whose output is `rows` numbers of ~21 characters
// (0.1 x 0.3 = 0.030000000000000002).
std::string TallMatVecArgs(int rows) {
  std::string args = "tcmm1 0 " + std::to_string(rows) + " 1";
  for (int i = 0; i < rows; ++i) args += " 0.1";
  return args + " 1 0.3";
}

}  // namespace

TEST_CASE("limits daemons: a 50M-task template and a flood of submits get TOO_LARGE and BUSY, memory stays bounded") {
  testing::DaemonClusterOptions o = Opts({"--set", "scheduler.max_jobs_per_owner=20"});
  o.http = true;  // each refusal is counted in /metrics
  testing::DaemonCluster c(o);
  const int pid = c.cluster->scheduler_pid();
  REQUIRE(pid > 0);
  const double rss_before = RssMiB(pid);
  REQUIRE(rss_before > 0);

  // ~40 bytes on the wire asking for ~800 MB of task state.
  for (int i = 0; i < 20; ++i) {
    auto big = c.client->Submit(FanoutJob("noop", "", 50'000'000));
    REQUIRE_FALSE(big.ok());
    CHECK(big.status().code() == Status::Code::kTooLarge);
    CHECK(Contains(big.status().message(), "job has 50000000 tasks; the limit is 1000000 (core.max_tasks_per_job)"));
  }
  // A flood from one client: 20 long jobs run, the rest are BUSY.
  int ok = 0, busy = 0;
  for (int i = 0; i < 500; ++i) {
    auto id = c.client->Submit(FanoutJob("sleep", "ms=600000", 1000));
    if (id.ok()) {
      ++ok;
    } else {
      CHECK(id.status().code() == Status::Code::kResourceExhausted);
      CHECK(Contains(id.status().message(), "(scheduler.max_jobs_per_owner = 20)"));
      ++busy;
    }
  }
  CHECK(ok == 20);
  CHECK(busy == 480);
  // Every refusal is in /metrics under the limit's config key (docs/METRICS.md).
  auto m = testing::ScrapeMetrics(c.cluster->http_endpoint());
  CHECK(m["tailcut_refusals_total{limit=\"core.max_tasks_per_job\"}"] == 20);
  CHECK(m["tailcut_refusals_total{limit=\"scheduler.max_jobs_per_owner\"}"] == busy);
  CHECK(m.count("tailcut_refusals_total{limit=\"scheduler.max_watchers_per_client\"}") == 1);  // listed at 0
  // Uncapped, the big submits alone would hold gigabytes.
  CHECK(RssMiB(pid) - rss_before < 100);
  CHECK(c.cluster->SchedulerAlive());
}

TEST_CASE("limits daemons: a burst of ~1,000 fast jobs and cancels with a small job_retention does not crash the scheduler") {
  testing::DaemonCluster c(Opts({"--set", "core.job_retention=5"}));
  std::vector<JobId> ids;
  for (int i = 0; i < 1000; ++i) {
    wire::JobSpec job = FanoutJob(i % 2 ? "noop" : "sleep", i % 2 ? "" : "ms=1", 1);
    job.set_stream_results(true);  // every job watched: its final status is pushed
    auto id = c.client->Submit(job);
    if (!id.ok()) {  // over a cap while the executor catches up: BUSY, never anything else
      CHECK(id.status().code() == Status::Code::kResourceExhausted);
      continue;
    }
    ids.push_back(*id);
    if (i % 3 == 0) {
      auto st = c.client->Cancel(*id);  // cancelled, already done, or already evicted
      if (!st.ok()) CHECK((st.status().code() == Status::Code::kInvalidArgument ||
                           st.status().code() == Status::Code::kNotFound));
    }
  }
  REQUIRE(ids.size() > 100);
  RunToSuccess(*c.client, FanoutJob("noop", "", 1));
  CHECK(c.cluster->SchedulerAlive());
}

TEST_CASE("limits daemons: a client that never reads its replies cannot grow the scheduler's memory") {
  testing::DaemonCluster c(Opts({"--set", "scheduler.client_hwm=10"}));
  // A finished job whose results reply is ~4 MB.
  wire::JobSpec job = FanoutJob("coded_matmul", TallMatVecArgs(2000), 100);
  job.set_return_outputs(true);
  JobId id = 0;
  RunToSuccess(*c.client, job, &id);
  auto results = c.client->Results(id);
  REQUIRE(results.ok());
  REQUIRE(results->size() == 100);
  auto sentinel = c.client->Submit(FanoutJob("sleep", "ms=600000", 1));
  REQUIRE(sentinel.ok());

  const int pid = c.cluster->scheduler_pid();
  const double rss_before = RssMiB(pid);
  // 200 requests for the results, never read: unbounded, the scheduler
  // would queue ~800 MB of replies; with client_hwm = 10 it drops the rest.
  zmq::context_t ctx;
  zmq::socket_t deaf(ctx, zmq::socket_type::dealer);
  deaf.set(zmq::sockopt::linger, 0);
  deaf.set(zmq::sockopt::rcvbuf, 4096);  // a small TCP window: replies back up at once
  const ClientOptions owner = c.cluster->client_options();  // the job's owner's key
  REQUIRE(ApplyPeerKeys(deaf, {owner.key_file, owner.scheduler_key}).ok());
  deaf.connect(c.cluster->client_endpoint());
  auto send = [&](wire::ClientRequest req, uint64_t n) {
    req.set_version(kProtocolVersion);
    req.set_request_id(n);
    deaf.send(ToFrame(req), zmq::send_flags::none);
  };
  wire::ClientRequest get;
  get.mutable_results()->set_job_id(id);
  for (uint64_t i = 1; i <= 200; ++i) send(get, i);
  // Then a cancel on the same connection: once the sentinel reads as
  // cancelled, every request before it was handled (one connection's
  // messages keep their order).
  wire::ClientRequest cancel;
  cancel.mutable_cancel()->set_job_id(*sentinel);
  send(cancel, 201);
  bool cancelled = false;
  for (int i = 0; i < 600 && !cancelled; ++i) {
    auto s = c.client->GetStatus(*sentinel);
    REQUIRE(s.ok());
    cancelled = s->state() == wire::JOB_CANCELLED;
    if (!cancelled) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(cancelled);
  CHECK(RssMiB(pid) - rss_before < 200);
  CHECK(c.cluster->SchedulerAlive());
}

namespace {

double PeakMiB(int pid) { return StatusMiB(pid, "VmHWM:"); }

std::string Varint(uint64_t n) {
  std::string out;
  for (; n >= 0x80; n >>= 7) out += static_cast<char>((n & 0x7f) | 0x80);
  return out + static_cast<char>(n);
}
std::string Bytes(int field, const std::string& b) { return Varint((field << 3) | 2) + Varint(b.size()) + b; }

}  // namespace

TEST_CASE("limits daemons: a 20 MB submit refused as TOO_LARGE raises the scheduler's peak memory by < 2x its size") {
  testing::DaemonCluster c(Opts({}));  // core.max_tasks_per_job = 1,000,000
  const int pid = c.cluster->scheduler_pid();
  // 10M empty TaskSpecs: 20 MB on the wire, ~1 GB if parsed.
  std::string tasks;
  for (int i = 0; i < 10'000'000; ++i) tasks.append("\x12\x00", 2);
  const std::string frame = Varint(1 << 3) + Varint(kProtocolVersion) + Varint(2 << 3) + Varint(5) +
                            Bytes(wire::ClientRequest::kSubmitFieldNumber,
                                  Bytes(wire::SubmitJob::kJobFieldNumber, tasks));
  tasks = std::string();
  const double frame_mib = static_cast<double>(frame.size()) / (1 << 20);
  const double peak_before = PeakMiB(pid);
  zmq::context_t ctx;
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::rcvtimeo, 30000);
  const ClientOptions co = c.cluster->client_options();
  REQUIRE(ApplyPeerKeys(s, {co.key_file, co.scheduler_key}).ok());
  s.connect(c.cluster->client_endpoint());
  REQUIRE(s.send(zmq::buffer(frame), zmq::send_flags::none));
  zmq::message_t in;
  REQUIRE(s.recv(in));
  wire::ClientReply reply;
  REQUIRE(FromFrame(in, &reply));
  REQUIRE(reply.has_error());
  CHECK(reply.request_id() == 5);
  CHECK(reply.error().code() == wire::Error::TOO_LARGE);
  const double peak_after = PeakMiB(pid);
  std::printf("limits: a %.1f MiB refused submit frame raised the scheduler's peak RSS by %.1f MiB\n", frame_mib,
              peak_after - peak_before);
  CHECK(peak_after - peak_before < 2 * frame_mib);
  // And it still serves.
  RunToSuccess(*c.client, FanoutJob("noop", "", 1));
}
