// /metrics (docs/METRICS.md): the Prometheus text rendering, the snapshot
// hand-over between the loop and the HTTP thread, the listener's address
// rules, and an in-process server scraped over HTTP.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "core_harness.h"
#include "http_server.h"
#include "metrics.h"
#include "tailcut/common/config.h"
#include "tailcut/server/server.h"

using namespace tailcut;
using namespace tailcut::metrics;

namespace {

// The samples of an exposition, "name{labels}" -> value, and the declared
// families; fails the test on a line that is neither a comment nor a
// sample, or a family declared twice.
struct Parsed {
  std::map<std::string, std::string> samples;
  std::map<std::string, std::string> types;  // family -> type
  std::set<std::string> helps;
};
Parsed Parse(const std::string& text) {
  Parsed p;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    REQUIRE_FALSE(line.empty());
    if (line.rfind("# HELP ", 0) == 0) {
      std::string name = line.substr(7, line.find(' ', 7) - 7);
      CHECK(p.helps.insert(name).second);
    } else if (line.rfind("# TYPE ", 0) == 0) {
      std::string rest = line.substr(7);
      std::string name = rest.substr(0, rest.find(' '));
      CHECK(p.types.emplace(name, rest.substr(rest.find(' ') + 1)).second);
      CHECK(p.helps.count(name));  // HELP comes first
    } else {
      size_t sp = line.rfind(' ');
      REQUIRE(sp != std::string::npos);
      p.samples[line.substr(0, sp)] = line.substr(sp + 1);
    }
  }
  return p;
}

// The family a sample belongs to (histogram suffixes stripped).
std::string FamilyOf(const std::string& sample, const Parsed& p) {
  std::string name = sample.substr(0, sample.find('{'));
  if (p.types.count(name)) return name;
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    size_t n = std::strlen(suffix);
    if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) {
      std::string base = name.substr(0, name.size() - n);
      if (p.types.count(base) && p.types.at(base) == "histogram") return base;
    }
  }
  return "";
}

// What a scrape of `m` gets while the loop publishes `core` (a scrape
// thread waits in Fresh, this one is the loop).
std::shared_ptr<const Snapshot> Scrape(SchedulerMetrics& m, const SchedulerCore& core) {
  std::shared_ptr<const Snapshot> got;
  std::atomic<bool> done{false};
  std::thread t([&] {
    got = m.Fresh(std::chrono::seconds(30));
    done = true;
  });
  while (!done) m.MaybePublish(core);
  t.join();
  return got;
}

// Loopback sockets on free ports, metrics on `http_listen`.
ServerOptions WithHttp(std::string http_listen) {
  ServerOptions o;
  o.executor_endpoint = "tcp://127.0.0.1:*";
  o.client_endpoint = "tcp://127.0.0.1:*";
  o.http_listen = std::move(http_listen);
  return o;
}

}  // namespace

TEST_CASE("metrics: label values and HELP escape backslash, quote and newline") {
  CHECK(EscapeLabelValue("plain") == "plain");
  CHECK(EscapeLabelValue("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
}

TEST_CASE("metrics: values print as Prometheus reads them") {
  CHECK(FormatValue(0) == "0");
  CHECK(FormatValue(12345678901.0) == "12345678901");
  CHECK(FormatValue(0.05) == "0.05");
  CHECK(FormatValue(2.5) == "2.5");
  CHECK(FormatValue(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(FormatValue(-std::numeric_limits<double>::infinity()) == "-Inf");
  CHECK(FormatValue(std::nan("")) == "NaN");
}

TEST_CASE("metrics: histogram buckets are cumulative, a value on a bound counts in it, +Inf is the count") {
  Snapshot s;
  for (double v : {0.01, 0.2, 7.0, 5000.0}) s.job_latency.Observe(v);
  Parsed p = Parse(Render(s));
  auto bucket = [&](const std::string& le) {
    return p.samples.at("tailcut_job_latency_seconds_bucket{le=\"" + le + "\"}");
  };
  CHECK(bucket("0.01") == "1");  // le: less or equal
  CHECK(bucket("0.1") == "1");
  CHECK(bucket("0.25") == "2");
  CHECK(bucket("5") == "2");
  CHECK(bucket("10") == "3");
  CHECK(bucket("3600") == "3");
  CHECK(bucket("+Inf") == "4");
  CHECK(p.samples.at("tailcut_job_latency_seconds_count") == "4");
  CHECK(std::stod(p.samples.at("tailcut_job_latency_seconds_sum")) == Approx(5007.21));
  // Cumulative: never decreasing in bound order.
  uint64_t last = 0;
  for (double b : JobLatencyBounds()) {
    uint64_t n = std::stoull(bucket(FormatValue(b)));
    CHECK(n >= last);
    last = n;
  }
}

TEST_CASE("metrics: every family has HELP and TYPE once, every sample a family, the issue's names are there") {
  Snapshot s;
  s.counters.jobs_succeeded = 3;
  s.counters.jobs_failed = 1;
  s.counters.tasks_committed = 42;
  s.counters.attempts_first = 40;
  s.counters.attempts_copy = 5;
  s.counters.attempts_restart = 2;
  s.counters.extra_machine_s = 1.5;
  s.counters.reports_refused = 9;
  s.counters.attempts_timed_out = 4;
  s.counters.copies_preempted = 6;
  s.owners = {{"user:ann", 2.0, 0, 12, 3, true}, {"user:bob", 1.0, 8, 4, 1, false}};
  s.jobs_running = 2;
  s.waiting_tasks = 7;
  s.executors_by_health = {3, 1, 1, 0};
  Parsed p = Parse(Render(s));
  for (auto& [sample, value] : p.samples) {
    INFO(sample);
    CHECK_FALSE(FamilyOf(sample, p).empty());
  }
  CHECK(p.types.at("tailcut_jobs") == "gauge");
  CHECK(p.types.at("tailcut_tasks_committed_total") == "counter");
  CHECK(p.types.at("tailcut_attempts_total") == "counter");
  CHECK(p.types.at("tailcut_extra_machine_seconds_total") == "counter");
  CHECK(p.types.at("tailcut_executors") == "gauge");
  CHECK(p.types.at("tailcut_job_latency_seconds") == "histogram");
  CHECK(p.types.at("tailcut_dispatch_queue_length") == "gauge");
  CHECK(p.samples.at("tailcut_jobs{state=\"running\"}") == "2");
  CHECK(p.samples.at("tailcut_jobs{state=\"succeeded\"}") == "3");
  CHECK(p.samples.at("tailcut_jobs{state=\"failed\"}") == "1");
  CHECK(p.samples.at("tailcut_jobs{state=\"cancelled\"}") == "0");
  CHECK(p.samples.at("tailcut_jobs_finished_total{state=\"succeeded\"}") == "3");
  CHECK(p.samples.at("tailcut_tasks_committed_total") == "42");
  CHECK(p.samples.at("tailcut_attempts_total{kind=\"first\"}") == "40");
  CHECK(p.samples.at("tailcut_attempts_total{kind=\"copy\"}") == "5");
  CHECK(p.samples.at("tailcut_attempts_total{kind=\"restart\"}") == "2");
  CHECK(p.samples.at("tailcut_extra_machine_seconds_total") == "1.5");
  CHECK(p.types.at("tailcut_reports_refused_total") == "counter");
  CHECK(p.samples.at("tailcut_reports_refused_total") == "9");
  CHECK(p.samples.at("tailcut_attempts_timed_out_total") == "4");
  CHECK(p.types.at("tailcut_copies_preempted_total") == "counter");
  CHECK(p.samples.at("tailcut_copies_preempted_total") == "6");
  CHECK(p.types.at("tailcut_owner_slots") == "gauge");
  CHECK(p.samples.at("tailcut_owner_slots{owner=\"user:ann\"}") == "12");
  CHECK(p.samples.at("tailcut_owner_weight{owner=\"user:bob\"}") == "1");
  CHECK(p.samples.at("tailcut_owner_jobs_running{owner=\"user:ann\"}") == "3");
  CHECK(p.samples.at("tailcut_dispatch_queue_length") == "7");
  CHECK(p.samples.at("tailcut_executors{health=\"healthy\"}") == "3");
  CHECK(p.samples.at("tailcut_executors{health=\"suspect\"}") == "1");
  CHECK(p.samples.at("tailcut_executors{health=\"fail_slow\"}") == "1");
  CHECK(p.samples.at("tailcut_executors{health=\"recovered\"}") == "0");
  CHECK(p.types.at("tailcut_journal_commit_seconds") == "histogram");
  CHECK(p.types.at("tailcut_journal_commit_failures_total") == "counter");
  CHECK(p.samples.at("tailcut_journal_commit_seconds_count") == "0");
}

TEST_CASE("metrics: journal commits land in their histogram, failures in their counter") {
  SchedulerMetrics m;
  m.OnJournalCommit(0.002, true);
  m.OnJournalCommit(0.3, true);
  m.OnJournalCommit(7.0, false);
  testing::CoreHarness h;
  std::shared_ptr<const Snapshot> got = Scrape(m, h.core);
  REQUIRE(got);
  Parsed p = Parse(Render(*got));
  CHECK(p.samples.at("tailcut_journal_commit_seconds_count") == "3");
  CHECK(p.samples.at("tailcut_journal_commit_seconds_bucket{le=\"0.0025\"}") == "1");
  CHECK(p.samples.at("tailcut_journal_commit_seconds_bucket{le=\"0.5\"}") == "2");
  CHECK(p.samples.at("tailcut_journal_commit_seconds_bucket{le=\"5\"}") == "2");
  CHECK(p.samples.at("tailcut_journal_commit_seconds_bucket{le=\"+Inf\"}") == "3");
  CHECK(p.samples.at("tailcut_journal_commit_failures_total") == "1");
}

TEST_CASE("metrics: the bounds a source reports are rendered, each shed reason and limit with its label") {
  SchedulerMetrics m;
  Bounds b;
  b.connections_accepted = 412;
  b.shed_unfinished = 7;
  b.shed_idle = 120;
  b.backlog_refused = 3;
  b.accept_failures = 9;
  b.connections_unfinished = 2;
  b.descriptor_limit = 256;
  b.refusals = {{"scheduler.max_jobs_per_owner", 480}, {"core.max_tasks_per_job", 0}};
  int asked = 0;
  m.AttachBounds([&] {
    ++asked;
    return b;
  });
  testing::CoreHarness h;
  m.MaybePublish(h.core);  // no scrape waits: the source is not asked
  CHECK(asked == 0);
  std::shared_ptr<const Snapshot> got = Scrape(m, h.core);
  REQUIRE(got);
  CHECK(asked == 1);
  Parsed p = Parse(Render(*got));
  CHECK(p.types.at("tailcut_connections_shed_total") == "counter");
  CHECK(p.types.at("tailcut_connections_unfinished") == "gauge");
  CHECK(p.samples.at("tailcut_connections_accepted_total") == "412");
  CHECK(p.samples.at("tailcut_connections_shed_total{reason=\"unfinished\"}") == "7");
  CHECK(p.samples.at("tailcut_connections_shed_total{reason=\"idle\"}") == "120");
  CHECK(p.samples.at("tailcut_connections_shed_total{reason=\"backlog\"}") == "3");
  CHECK(p.samples.at("tailcut_connection_accept_failures_total") == "9");
  CHECK(p.samples.at("tailcut_connections_unfinished") == "2");
  CHECK(p.samples.at("tailcut_descriptor_limit") == "256");
  CHECK(p.samples.at("tailcut_refusals_total{limit=\"scheduler.max_jobs_per_owner\"}") == "480");
  CHECK(p.samples.at("tailcut_refusals_total{limit=\"core.max_tasks_per_job\"}") == "0");
}

TEST_CASE("metrics: a snapshot reads the core's counters, executors and finished jobs' latency") {
  testing::CoreHarness h;
  SchedulerMetrics m;
  h.core.AddObserver(&m);
  h.Exec(2);
  h.Exec(3);
  auto id = h.core.SubmitJob(testing::CoreHarness::Fanout(7));
  REQUIRE(id.ok());
  h.Drain();
  // Published only when asked: ask from another thread, publish here (the
  // loop's turns) until it has its snapshot.
  auto scrape = [&] {
    std::atomic<bool> done{false};
    std::shared_ptr<const Snapshot> got;
    std::thread t([&] {
      got = m.Fresh(std::chrono::seconds(30));
      done = true;
    });
    while (!done) m.MaybePublish(h.core);
    t.join();
    return got;
  };
  auto got = scrape();
  REQUIRE(got);
  CHECK(got->counters.attempts_first == 5);
  CHECK(got->jobs_running == 1);
  CHECK(got->waiting_tasks == 2);
  CHECK(got->live_attempts == 5);
  CHECK(got->total_slots == 5);
  CHECK(got->executors_by_health[0] == 2);
  h.clock.Advance(0.3);
  while (!h.live.empty()) h.Finish(h.live.begin()->first);
  REQUIRE(h.finished.count(*id));
  got = scrape();
  REQUIRE(got);
  CHECK(got->counters.jobs_succeeded == 1);
  CHECK(got->counters.tasks_committed == 7);
  CHECK(got->job_latency.count == 1);
  CHECK(got->job_latency.sum == Approx(0.3));
}

TEST_CASE("metrics: a scrape nobody answers times out with what was published last (none yet)") {
  SchedulerMetrics m;
  CHECK(m.Fresh(std::chrono::milliseconds(1)) == nullptr);
}

TEST_CASE("metrics: http_listen addresses") {
  auto hp = ParseHttpListen("127.0.0.1:7780");
  REQUIRE(hp.ok());
  CHECK(hp->first == "127.0.0.1");
  CHECK(hp->second == 7780);
  hp = ParseHttpListen("[::1]:0");
  REQUIRE(hp.ok());
  CHECK(hp->first == "::1");
  CHECK(hp->second == 0);
  for (const char* bad : {"", "7780", ":7780", "host:", "host:x", "host:70000", "::1:80", "[::1:80"}) {
    INFO(bad);
    CHECK_FALSE(ParseHttpListen(bad).ok());
  }
  CHECK(IsLoopbackHttpListen("127.0.0.1:7780"));
  CHECK(IsLoopbackHttpListen("localhost:7780"));
  CHECK(IsLoopbackHttpListen("[::1]:7780"));
  CHECK_FALSE(IsLoopbackHttpListen("0.0.0.0:7780"));
  CHECK_FALSE(IsLoopbackHttpListen("10.1.2.3:7780"));
}

TEST_CASE("metrics: the daemon's default listens on 127.0.0.1:7780, a bad address is a config error") {
  auto cfg = Config::Parse("");
  REQUIRE(cfg.ok());
  ServerOptions o;
  REQUIRE(LoadServerOptions(*cfg, &o).ok());
  CHECK(o.http_listen == "127.0.0.1:7780");
  auto bad = Config::Parse("[scheduler]\nhttp_listen = \"nowhere\"\n");
  REQUIRE(bad.ok());
  Status s = LoadServerOptions(*bad, &o);
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("http_listen") != std::string::npos);
}

TEST_CASE("metrics: beyond loopback without keys is refused unless insecure") {
  ServerOptions o = WithHttp("0.0.0.0:0");
  {
    SchedulerServer server(o);
    Status s = server.Bind();
    CHECK_FALSE(s.ok());
    CHECK(s.message().find("http 0.0.0.0:0") != std::string::npos);
    CHECK(s.message().find("needs keys") != std::string::npos);
  }
  o.insecure = true;
  SchedulerServer server(o);
  REQUIRE(server.Bind().ok());
  CHECK_FALSE(server.http_endpoint().empty());
}

TEST_CASE("metrics: an in-process server answers GET /metrics over HTTP, 404 elsewhere") {
  ServerOptions o = WithHttp("127.0.0.1:0");
  SchedulerServer server(o);
  REQUIRE(server.Bind().ok());
  std::thread loop([&] { server.Run(); });
  auto hp = ParseHttpListen(server.http_endpoint());
  REQUIRE(hp.ok());
  httplib::Client cli(hp->first, hp->second);
  auto res = cli.Get("/metrics");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->get_header_value("Content-Type").find("version=0.0.4") != std::string::npos);
  Parsed p = Parse(res->body);
  CHECK(p.samples.at("tailcut_jobs{state=\"running\"}") == "0");
  auto missing = cli.Get("/nothing");
  REQUIRE(missing);
  CHECK(missing->status == 404);
  server.Stop();
  loop.join();
}

TEST_CASE("metrics: a taken port is a start error, not a silent scheduler without metrics") {
  HttpServer first;
  REQUIRE(first.Start("127.0.0.1:0").ok());
  ServerOptions o = WithHttp(first.endpoint());
  SchedulerServer server(o);
  Status s = server.Bind();
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("cannot listen for HTTP") != std::string::npos);
}
