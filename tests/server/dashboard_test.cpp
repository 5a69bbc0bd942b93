// The dashboard (docs/DASHBOARD.md): JSON escaping, what the recorder keeps
// from the core's events (kinds, winners, per-job stats) and that it stays
// bounded, and the page and API served by an in-process scheduler.
#include <catch2/catch.hpp>

#include <thread>

#include <httplib.h>

#include "core_harness.h"
#include "dashboard.h"
#include "http_server.h"
#include "tailcut/server/server.h"

using namespace tailcut;
using namespace tailcut::dashboard;
using tailcut::testing::CoreHarness;

namespace {

// A core harness with a dashboard recorder observing it, as the live
// driver has.
struct Fixture {
  Fixture() { h.core.AddObserver(&rec); }
  State Collect() { return rec.Collect(h.core, h.clock.Now()); }
  CoreHarness h;
  ActivityRecorder rec{&h.clock};
};

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) n++;
  return n;
}

}  // namespace

TEST_CASE("dashboard: strings are JSON-escaped, markup characters included") {
  CHECK(JsonString("plain") == "\"plain\"");
  CHECK(JsonString("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(JsonString("line\nnext\ttab\r") == "\"line\\nnext\\ttab\\r\"");
  CHECK(JsonString(std::string("nul\0bel\x07", 8)) == "\"nul\\u0000bel\\u0007\"");
  // A name is never markup, even on a page that forgot textContent.
  CHECK(JsonString("<script>alert(1)</script>&") ==
        "\"\\u003cscript\\u003ealert(1)\\u003c/script\\u003e\\u0026\"");
  CHECK(JsonString("caf\xc3\xa9 \xe2\x9c\x93") == "\"caf\xc3\xa9 \xe2\x9c\x93\"");  // valid UTF-8 kept
  CHECK(JsonString("\xe2\x80\xa8") == "\"\\u2028\"");
  // Invalid UTF-8 (a stray continuation, a truncated sequence, an overlong
  // '/', a surrogate) becomes U+FFFD, byte by byte.
  CHECK(JsonString("a\x80z") == "\"a\\ufffdz\"");
  CHECK(JsonString("\xe2\x9c") == "\"\\ufffd\\ufffd\"");
  CHECK(JsonString("\xc0\xaf") == "\"\\ufffd\\ufffd\"");
  CHECK(JsonString("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");
}

TEST_CASE("dashboard: the fleet view is bounded and counts the whole fleet") {
  Fixture f;
  const size_t n = kExecutorsShown + 50;
  for (size_t i = 0; i < n; ++i) f.h.Exec(2);
  auto job = f.h.core.SubmitJob(CoreHarness::Fanout(3));
  REQUIRE(job.ok());
  f.h.Drain();
  State s = f.Collect();
  CHECK(s.executors.size() == kExecutorsShown);
  CHECK(s.executors_total == n);
  CHECK(s.total_slots == 2 * n);
  CHECK(s.running_total == 3);
  const std::string json = RenderExecutors(s);
  CHECK(json.find("\"total\":" + std::to_string(n) + ",") != std::string::npos);
  CHECK(json.find("\"slots\":" + std::to_string(2 * n) + ",") != std::string::npos);
  CHECK(Count(json, "\"last_seen_ago_s\"") == kExecutorsShown);
}

TEST_CASE("dashboard: jobs, executors and attempts with their kind and outcome") {
  Fixture f;
  f.h.Exec(1);
  JobDef def = CoreHarness::Fanout(2);
  def.name = "<img src=x onerror=alert(1)>";
  auto job = f.h.core.SubmitJob(def);
  REQUIRE(job.ok());
  f.h.Drain();
  REQUIRE(f.h.launches.size() == 1);
  State live = f.Collect();
  REQUIRE(live.attempts.size() == 1);
  CHECK(live.attempts[0].live);
  CHECK(RenderAttempts(live, 0).find("\"outcome\":\"running\"") != std::string::npos);

  // The first attempt fails: the task's next attempt is a restart.
  f.h.clock.Advance(1);
  AttemptId first = f.h.launches[0].attempt;
  f.h.live.erase(first);
  f.h.core.AttemptFailed(first, "boom", 1.0);
  f.h.Drain();
  while (!f.h.live.empty()) {
    f.h.clock.Advance(0.5);
    f.h.Finish(f.h.live.begin()->first, 0.5);
  }
  REQUIRE(f.h.finished.count(*job));

  State s = f.Collect();
  REQUIRE(s.attempts.size() == 3);
  CHECK(s.attempts[0].outcome == AttemptOutcome::kFailed);
  CHECK(s.attempts[0].kind == AttemptKind::kFirst);
  CHECK(s.attempts[1].kind == AttemptKind::kRestart);
  CHECK(s.attempts[1].outcome == AttemptOutcome::kCommitted);
  CHECK(s.attempts[1].task == s.attempts[0].task);
  CHECK(s.attempts[2].kind == AttemptKind::kFirst);
  CHECK(s.last_seq == 3);
  REQUIRE(s.jobs.size() == 1);
  CHECK(s.jobs[0].restarts == 1);
  CHECK(s.jobs[0].copies_won == 0);
  CHECK(s.jobs[0].run_p50 == Approx(0.5));
  REQUIRE(s.latencies.size() == 1);
  CHECK(s.latencies[0] == Approx(2.0));

  std::string jobs = RenderJobs(s);
  CHECK(jobs.find("\"name\":\"\\u003cimg src=x onerror=alert(1)\\u003e\"") != std::string::npos);
  CHECK(jobs.find("<img") == std::string::npos);
  CHECK(jobs.find("\"state\":\"succeeded\"") != std::string::npos);
  CHECK(jobs.find("\"committed\":2") != std::string::npos);
  CHECK(jobs.find("\"restarts\":1") != std::string::npos);
  std::string execs = RenderExecutors(s);
  CHECK(execs.find("\"name\":\"e1\"") != std::string::npos);
  CHECK(execs.find("\"health\":\"healthy\"") != std::string::npos);
  // ?since= returns only what ended after it.
  CHECK(Count(RenderAttempts(s, 0), "\"seq\":") == 3);
  CHECK(Count(RenderAttempts(s, 2), "\"seq\":") == 1);
  CHECK(RenderAttempts(s, 2).find("\"seq\":3") != std::string::npos);
  CHECK(RenderLatency(s) == "{\"jobs_finished\":1,\"window\":1000,\"latencies_s\":[2]}");
}

TEST_CASE("dashboard: memory stays bounded: the attempt ring, finished jobs, latencies") {
  Fixture f;
  f.h.Exec(64);
  const uint32_t kTasks = static_cast<uint32_t>(kRecentAttempts) + 500;
  auto job = f.h.core.SubmitJob(CoreHarness::Fanout(kTasks));
  REQUIRE(job.ok());
  f.h.Drain();
  while (!f.h.live.empty()) {
    f.h.Finish(f.h.live.begin()->first);
  }
  State s = f.Collect();
  CHECK(s.attempts.size() == kRecentAttempts);
  CHECK(s.last_seq == kTasks);
  CHECK(s.attempts.front().seq == kTasks - kRecentAttempts + 1);  // the oldest dropped first
  CHECK(s.attempts.back().seq == kTasks);
  REQUIRE(s.jobs.size() == 1);
  CHECK(s.jobs[0].status.committed == kTasks);

  for (size_t i = 0; i < kFinishedJobs + 5; ++i) {
    auto id = f.h.core.SubmitJob(CoreHarness::Fanout(1));
    REQUIRE(id.ok());
    f.h.Drain();
    while (!f.h.live.empty()) f.h.Finish(f.h.live.begin()->first);
  }
  s = f.Collect();
  CHECK(s.jobs.size() == kFinishedJobs);
  CHECK(s.jobs_finished == kFinishedJobs + 6);
  CHECK(s.jobs.front().status.id > s.jobs.back().status.id);  // newest first
  CHECK(s.attempts.size() == kRecentAttempts);
}

TEST_CASE("dashboard: the scheduler serves the page and the API, with a strict CSP") {
  ServerOptions o;
  o.executor_endpoint = "tcp://127.0.0.1:*";
  o.client_endpoint = "tcp://127.0.0.1:*";
  o.http_listen = "127.0.0.1:0";
  SchedulerServer server(o);
  REQUIRE(server.Bind().ok());
  std::thread loop([&] { server.Run(); });
  auto hp = ParseHttpListen(server.http_endpoint());
  REQUIRE(hp.ok());
  httplib::Client cli(hp->first, hp->second);
  auto page = cli.Get("/");
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->get_header_value("Content-Type").find("text/html") == 0);
  CHECK(page->get_header_value("Content-Security-Policy").find("script-src 'self'") != std::string::npos);
  CHECK(page->body.find("<script src=\"app.js\"") != std::string::npos);
  auto js = cli.Get("/app.js");
  REQUIRE(js);
  CHECK(js->get_header_value("Content-Type").find("text/javascript") == 0);
  CHECK(js->body.find("textContent") != std::string::npos);
  CHECK(js->body.find(".innerHTML") == std::string::npos);  // the page sets text, never markup
  auto jobs = cli.Get("/api/jobs");
  REQUIRE(jobs);
  CHECK(jobs->status == 200);
  CHECK(jobs->get_header_value("Content-Type") == "application/json");
  CHECK(jobs->body.find("\"jobs\":[]") != std::string::npos);
  auto attempts = cli.Get("/api/attempts?since=5");
  REQUIRE(attempts);
  CHECK(attempts->body.find("\"attempts\":[]") != std::string::npos);
  auto replica = cli.Get("/api/replica");  // a single scheduler
  REQUIRE(replica);
  CHECK(replica->status == 200);
  CHECK(replica->body == "{\"replica\":null}");
  for (const char* path : {"/api/executors", "/api/latency", "/style.css"}) {
    auto r = cli.Get(path);
    REQUIRE(r);
    CHECK(r->status == 200);
  }
  server.Stop();
  loop.join();
}

TEST_CASE("dashboard: owners' shares, most slots first, bounded with the rest as (others)") {
  std::vector<OwnerShareInfo> all;
  for (int i = 0; i < 40; ++i) all.push_back({"o" + std::to_string(i), 1.0, 0, static_cast<uint64_t>(i), 1, false});
  auto top = TopOwners(all);
  REQUIRE(top.size() == kMaxOwnerSeries + 1);
  CHECK(top.front().owner == "o39");
  CHECK(top.back().owner == "(others)");
  uint64_t rest = 0;
  for (int i = 0; i < 40 - static_cast<int>(kMaxOwnerSeries); ++i) rest += i;
  CHECK(top.back().slots == rest);
  CHECK(top.back().jobs == 40 - kMaxOwnerSeries);

  CoreOptions o;
  o.owners.owners = {{"a", {3.0, 0}}};
  CoreHarness h(o);
  h.Exec(4);
  JobDef a = CoreHarness::Fanout(10);
  a.owner = "a";
  JobDef b = CoreHarness::Fanout(10);
  b.owner = "b";
  (void)h.core.SubmitJob(a);
  (void)h.core.SubmitJob(b);
  h.Drain();
  ActivityRecorder rec(&h.clock);
  State st = rec.Collect(h.core, 0);
  CHECK(st.total_slots == 4);
  std::string json = RenderOwners(st);
  INFO(json);
  CHECK(json.find("\"owner\":\"a\",\"weight\":3") != std::string::npos);
  CHECK(json.find("\"slots\":3") != std::string::npos);  // weights 3:1 on 4 slots
  CHECK(json.find("\"fair_share\":0.75") != std::string::npos);
  CHECK(json.find("\"total_slots\":4") != std::string::npos);
}
