// The live driver's own caps: running jobs per owner, watchers per client,
// registered executors (issue #11).
#include <catch2/catch.hpp>

#include "admission.h"

using namespace tailcut;

TEST_CASE("admission: running jobs per owner, freed as jobs finish") {
  Admission a({.max_jobs_per_owner = 2});
  REQUIRE(a.CheckJob("alice").ok());
  a.JobStarted(1, "alice");
  a.JobStarted(2, "alice");
  a.JobStarted(3, "bob");
  Status busy = a.CheckJob("alice");
  REQUIRE_FALSE(busy.ok());
  CHECK(busy.code() == Status::Code::kResourceExhausted);
  CHECK(busy.message() == "this owner already has 2 running jobs (scheduler.max_jobs_per_owner = 2); retry later");
  CHECK(a.CheckJob("bob").ok());
  a.JobFinished(1);
  a.JobFinished(1);   // twice: counted once
  a.JobFinished(42);  // never started here (a recovered job): ignored
  CHECK(a.RunningJobsOf("alice") == 1);
  CHECK(a.CheckJob("alice").ok());
}

TEST_CASE("admission: watchers per client and registered executors, 0 meaning no cap") {
  Admission a({.max_watchers_per_client = 1, .max_executors = 3});
  REQUIRE(a.CheckWatch("c1").ok());
  a.WatchAdded("c1");
  Status busy = a.CheckWatch("c1");
  REQUIRE_FALSE(busy.ok());
  CHECK(busy.message().find("scheduler.max_watchers_per_client = 1") != std::string::npos);
  CHECK(a.CheckWatch("c2").ok());
  a.WatchEnded("c1");
  CHECK(a.WatchersOf("c1") == 0);
  CHECK(a.CheckWatch("c1").ok());
  CHECK(a.CheckExecutor(2).ok());
  Status full = a.CheckExecutor(3);
  REQUIRE_FALSE(full.ok());
  CHECK(full.message() == "3 executors are registered (scheduler.max_executors = 3); retry later");
  Admission open({});
  for (JobId j = 1; j <= 5000; ++j) open.JobStarted(j, "x");
  CHECK(open.CheckJob("x").ok());
  CHECK(open.CheckExecutor(1'000'000).ok());
}

TEST_CASE("admission: without keys a new stated name per submit is still held to the cap per connection") {
  Admission a({.max_jobs_per_owner = 3});
  for (JobId j = 1; j <= 3; ++j) {
    const std::string owner = "user:name-" + std::to_string(j);  // a new name each time
    REQUIRE(a.CheckJob(owner, "conn-A").ok());
    a.JobStarted(j, owner, "conn-A");
  }
  Status busy = a.CheckJob("user:name-4", "conn-A");
  REQUIRE_FALSE(busy.ok());
  CHECK(busy.code() == Status::Code::kResourceExhausted);
  CHECK(busy.message().find("this connection already has 3 running jobs") != std::string::npos);
  CHECK(a.CheckJob("user:name-4", "conn-B").ok());  // another connection has its own count
  a.JobFinished(2);
  CHECK(a.CheckJob("user:name-4", "conn-A").ok());
}
