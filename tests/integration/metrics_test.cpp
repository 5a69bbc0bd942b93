// End to end, issue #13 "metrics": the real tailcut-scheduler daemon runs
// jobs, then GET /metrics (httplib's client) must agree with what the
// client API reports for the same jobs and executors (`tailcut status`,
// `tailcut executors`). docs/METRICS.md.
#include <catch2/catch.hpp>

#include <map>
#include <sstream>

#include <httplib.h>

#include "daemon_cluster.h"

using namespace tailcut;
using namespace tailcut::testing;

namespace {

// "name{labels}" -> value of every sample in a text exposition.
std::map<std::string, double> Scrape(const std::string& endpoint) {
  size_t colon = endpoint.rfind(':');
  httplib::Client cli(endpoint.substr(0, colon), std::stoi(endpoint.substr(colon + 1)));
  cli.set_read_timeout(10, 0);
  auto res = cli.Get("/metrics");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  std::map<std::string, double> out;
  std::istringstream in(res->body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t sp = line.rfind(' ');
    out[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
  }
  return out;
}

}  // namespace

TEST_CASE("GET /metrics matches the client's view: jobs by state, commits, attempts, executors, latency") {
  DaemonClusterOptions o;
  o.executors = 2;
  o.http = true;
  DaemonCluster c(o);
  REQUIRE_FALSE(c.cluster->http_endpoint().empty());

  std::vector<JobId> ids;
  auto submit = [&](const wire::JobSpec& job) {
    auto id = c.client->Submit(job);
    REQUIRE(id.ok());
    ids.push_back(*id);
    return *id;
  };
  auto wait = [&](JobId id) {
    WaitOptions w;
    w.timeout_s = 60;
    auto st = c.client->Wait(id, w);
    REQUIRE(st.ok());
    return *st;
  };
  for (int i = 0; i < 3; ++i) CHECK(wait(submit(FanoutJob("noop", "", 50))).state() == wire::JOB_SUCCEEDED);
  // A task whose kernel rejects its arguments when it runs fails every
  // attempt: the job fails after max_attempts, its relaunches are restarts.
  // (coded_matmul reads a format of its own and declares nothing, so the
  // scheduler takes the job; matmul's n=0 is refused at submit now.)
  wire::JobSpec bad = FanoutJob("coded_matmul", "not a coded task", 1);
  const wire::JobStatus failed = wait(submit(bad));
  CHECK(failed.state() == wire::JOB_FAILED);
  INFO("failing job: attempts " << failed.attempts() << ", failed " << failed.failed_attempts() << ", copies "
                                << failed.copies() << ": " << failed.reason());
  // Long tasks, cancelled while they run.
  JobId slow = submit(FanoutJob("sleep", "ms=60000", 8));
  REQUIRE(c.client->Cancel(slow).ok());
  CHECK(wait(slow).state() == wire::JOB_CANCELLED);

  // What the client API says, summed over the jobs this test ran (the
  // scheduler ran no others).
  std::map<wire::JobState, double> by_state;
  double committed = 0, attempts = 0, copies = 0;
  for (JobId id : ids) {
    auto st = c.client->GetStatus(id);
    REQUIRE(st.ok());
    by_state[st->state()]++;
    committed += st->committed();
    attempts += st->attempts();
    copies += st->copies();
  }
  auto executors = c.client->Executors();
  REQUIRE(executors.ok());
  std::map<wire::ExecutorHealth::State, double> by_health;
  for (const auto& e : *executors) by_health[e.health().state()]++;

  auto m = Scrape(c.cluster->http_endpoint());
  CHECK(m.at("tailcut_jobs{state=\"running\"}") == 0);
  CHECK(m.at("tailcut_jobs{state=\"succeeded\"}") == by_state[wire::JOB_SUCCEEDED]);
  CHECK(m.at("tailcut_jobs{state=\"succeeded\"}") == 3);
  CHECK(m.at("tailcut_jobs{state=\"failed\"}") == by_state[wire::JOB_FAILED]);
  CHECK(m.at("tailcut_jobs{state=\"cancelled\"}") == by_state[wire::JOB_CANCELLED]);
  CHECK(m.at("tailcut_tasks_committed_total") == committed);
  CHECK(m.at("tailcut_tasks_committed_total") >= 150);
  double first = m.at("tailcut_attempts_total{kind=\"first\"}");
  double copy = m.at("tailcut_attempts_total{kind=\"copy\"}");
  double restart = m.at("tailcut_attempts_total{kind=\"restart\"}");
  CHECK(first + copy + restart == attempts);
  CHECK(copy == copies);
  // The failing task's attempts beyond its first that were not copies
  // (the default chain may clone it) were restarts.
  CHECK(restart >= 1);
  CHECK(restart >= failed.attempts() - failed.copies() - 1.0);
  CHECK(m.at("tailcut_extra_machine_seconds_total") >= 0);
  CHECK(m.at("tailcut_executors{health=\"healthy\"}") == by_health[wire::ExecutorHealth::HEALTHY]);
  CHECK(m.at("tailcut_executors{health=\"suspect\"}") == by_health[wire::ExecutorHealth::SUSPECT]);
  CHECK(m.at("tailcut_executors{health=\"fail_slow\"}") == by_health[wire::ExecutorHealth::FAIL_SLOW]);
  CHECK(m.at("tailcut_executors{health=\"healthy\"}") + m.at("tailcut_executors{health=\"suspect\"}") +
            m.at("tailcut_executors{health=\"fail_slow\"}") + m.at("tailcut_executors{health=\"recovered\"}") ==
        2);
  CHECK(m.at("tailcut_slots") == 4);
  CHECK(m.at("tailcut_dispatch_queue_length") == 0);
  CHECK(m.at("tailcut_attempts_running") == 0);
  CHECK(m.at("tailcut_job_latency_seconds_count") == static_cast<double>(ids.size()));
  CHECK(m.at("tailcut_job_latency_seconds_bucket{le=\"+Inf\"}") == static_cast<double>(ids.size()));
}

TEST_CASE("a queued job shows in tailcut_dispatch_queue_length and tailcut_jobs{state=running}") {
  DaemonClusterOptions o;
  o.executors = 1;
  o.slots = 1;
  o.http = true;
  DaemonCluster c(o);
  // One slot, 5 long tasks: one runs, four wait for it.
  auto id = c.client->Submit(FanoutJob("sleep", "ms=60000", 5));
  REQUIRE(id.ok());
  // The scheduler has accepted the job when Submit returns; the launch of
  // the first task may still be on its way, so count running + waiting.
  auto m = Scrape(c.cluster->http_endpoint());
  CHECK(m.at("tailcut_jobs{state=\"running\"}") == 1);
  CHECK(m.at("tailcut_dispatch_queue_length") + m.at("tailcut_attempts_running") == 5);
  REQUIRE(c.client->Cancel(*id).ok());
}
