// Chaos soak (docs/RELIABILITY.md): a stream of jobs on a local cluster
// while executors are killed -9 every few seconds and the scheduler itself
// every ~20 s (each restarted), then checked from the journal and from the
// clients' own records: every accepted job finished, every task committed
// exactly once, no client got a wrong status.
//
// ctest runs a short version (TAILCUT_CHAOS_SECONDS unset: ~30 s, >= 3
// scheduler kills, >= 10 executor kills); scripts/chaos.sh runs it longer.
#include <catch2/catch.hpp>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "tailcut/client/client.h"
#include "tailcut/client/local_cluster.h"
#include "tailcut/server/journal.h"

using namespace tailcut;

namespace {

using WallClock = std::chrono::steady_clock;

double EnvSeconds(const char* name, double def) {
  const char* v = std::getenv(name);
  return v && *v ? std::atof(v) : def;
}

struct ClientRecord {
  JobId id = 0;
  uint32_t tasks = 0;
  bool finished = false;
  bool succeeded = false;
  bool wrong_status = false;   // a status of another job, or a lost one
  size_t results = 0, duplicate_results = 0;
  std::string error;
};

}  // namespace

TEST_CASE("chaos: executors and the scheduler killed -9 and restarted, no accepted job lost, no task committed twice") {
  const double seconds = EnvSeconds("TAILCUT_CHAOS_SECONDS", 30);
  const double executor_kill_every = EnvSeconds("TAILCUT_CHAOS_EXECUTOR_KILL_S", 2.0);
  const double scheduler_kill_every = EnvSeconds("TAILCUT_CHAOS_SCHEDULER_KILL_S", seconds >= 120 ? 20 : 7);
  const int clients = 4;

  LocalClusterOptions o;
  o.name = "chaos";
  o.scheduler_binary = TAILCUT_SCHEDULER_BIN;
  o.executor_binary = TAILCUT_EXECUTOR_BIN;
  // Every job stays queryable (and journaled) to the end, for the checks.
  o.scheduler_flags = {"--policy", "default", "--set", "scheduler.heartbeat_ms=100", "--set", "core.lost_after_s=1.0",
                       "--set", "core.job_retention=1000000", "--log-level", "warn"};
  auto started = LocalCluster::Start(o);
  REQUIRE(started.ok());
  std::unique_ptr<LocalCluster> cluster = std::move(started).value();
  const int executors = 4;
  for (int i = 0; i < executors; ++i) {
    LocalExecutorSpec e;
    e.flags = {"--slots", "2", "--name", "chaos-" + std::to_string(i), "--log-level", "warn"};
    e.restart = true;  // a supervisor brings killed executors back
    REQUIRE(cluster->AddExecutor(e).ok());
  }
  REQUIRE(cluster->WaitForExecutors(executors, 30).ok());

  std::mutex mu;
  std::vector<ClientRecord> records;
  std::atomic<bool> submitting{true};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      ClientOptions co = cluster->client_options();
      co.timeout_s = 30;
      Client client(co);
      std::mt19937 rng(static_cast<unsigned>(1000 + c));
      while (submitting) {
        ClientRecord r;
        r.tasks = 5 + rng() % 20;
        wire::JobSpec job = FanoutJob("sleep", "ms=" + std::to_string(10 + rng() % 40), r.tasks);
        job.set_return_outputs(true);
        job.set_max_attempts(20);  // random executor kills are not the task's fault
        auto id = client.Submit(job);
        if (!id.ok()) {  // never accepted: nothing to account for
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          continue;
        }
        r.id = *id;
        WaitOptions w;
        w.timeout_s = 180;
        w.reconnect_timeout_s = 120;
        auto st = client.Wait(*id, w);
        if (st.ok()) {
          r.finished = IsTerminal(st->state());
          r.succeeded = st->state() == wire::JOB_SUCCEEDED;
          r.wrong_status = st->job_id() != *id || st->request_key().empty();
          if (!r.succeeded) r.error = st->reason();
          auto results = client.Results(*id);
          if (results.ok()) {
            std::set<uint32_t> seen;
            for (const auto& x : *results) r.duplicate_results += !seen.insert(x.task_index()).second;
            r.results = seen.size();
          } else {
            r.error = results.status().message();
          }
        } else {
          r.error = st.status().message();
          r.wrong_status = st.status().message().find("was lost") != std::string::npos;
        }
        std::lock_guard<std::mutex> lock(mu);
        records.push_back(std::move(r));
      }
    });
  }

  // The chaos: kill -9 a random executor every few seconds, the scheduler
  // every scheduler_kill_every seconds; restart each.
  int executor_kills = 0, scheduler_kills = 0;
  std::mt19937 rng(7);
  auto t0 = WallClock::now();
  double next_exec = executor_kill_every, next_sched = scheduler_kill_every;
  for (;;) {
    double t = std::chrono::duration<double>(WallClock::now() - t0).count();
    if (t >= seconds) break;
    if (t >= next_exec) {
      cluster->SignalExecutor(rng() % executors, SIGKILL);
      ++executor_kills;
      next_exec += executor_kill_every;
    }
    if (t >= next_sched) {
      cluster->SignalScheduler(SIGKILL);
      REQUIRE(cluster->RestartScheduler().ok());
      ++scheduler_kills;
      next_sched += scheduler_kill_every;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  submitting = false;
  for (auto& t : threads) t.join();
  std::string journal_path = cluster->log_dir() + "/state/journal.db";
  cluster->KeepLogs();  // removed below when everything checks out
  std::string log_dir = cluster->log_dir();
  cluster.reset();      // SIGTERM: the scheduler commits its journal and stops

  // The clients' own records.
  size_t jobs = records.size(), unfinished = 0, failed = 0, wrong = 0, missing = 0, duplicates = 0, tasks = 0;
  for (const ClientRecord& r : records) {
    tasks += r.tasks;
    unfinished += !r.finished;
    failed += r.finished && !r.succeeded;
    wrong += r.wrong_status;
    missing += r.succeeded && r.results != r.tasks;
    duplicates += r.duplicate_results;
    if (!r.succeeded) UNSCOPED_INFO("job " << r.id << ": " << r.error);
  }
  // The journal: every accepted job finished, each task committed once.
  JournalOptions jo;
  jo.path = journal_path;
  auto journal = Journal::Open(jo);
  REQUIRE(journal.ok());
  std::vector<JournaledJob> journaled;
  REQUIRE((*journal)->Load(&journaled).ok());
  size_t journal_unfinished = 0, journal_double = 0, journal_incomplete = 0;
  std::map<JobId, uint32_t> tasks_of;
  for (const ClientRecord& r : records) tasks_of[r.id] = r.tasks;
  for (const JournaledJob& j : journaled) {
    journal_unfinished += !j.finished;
    std::set<TaskIndex> seen;
    for (const CommittedOutput& c : j.commits) journal_double += !seen.insert(c.task).second;
    // A fan-out with rule "all" that succeeded: every task committed.
    auto it = tasks_of.find(j.id);
    if (j.finished && j.state == JobState::kSucceeded && it != tasks_of.end() && seen.size() != it->second)
      ++journal_incomplete;
  }
  std::printf("chaos: %.0f s, %zu jobs, %zu tasks, %d executor kills, %d scheduler kills; lost %zu, failed %zu, "
              "wrong statuses %zu, missing results %zu, double commits %zu (client) %zu (journal), journal: %zu jobs, "
              "%zu unfinished, %zu incomplete\n",
              seconds, jobs, tasks, executor_kills, scheduler_kills, unfinished, failed, wrong, missing, duplicates,
              journal_double, journaled.size(), journal_unfinished, journal_incomplete);
  CHECK(jobs > 0);
  CHECK(scheduler_kills >= 3);
  CHECK(executor_kills >= 10);
  CHECK(unfinished == 0);
  CHECK(failed == 0);
  CHECK(wrong == 0);
  CHECK(missing == 0);
  CHECK(duplicates == 0);
  CHECK(journal_double == 0);
  CHECK(journal_unfinished == 0);
  CHECK(journal_incomplete == 0);
  CHECK(journaled.size() >= jobs);  // every job a client saw accepted is in the journal
  if (unfinished + failed + wrong + missing + duplicates + journal_double + journal_unfinished == 0) {
    std::error_code ec;
    std::filesystem::remove_all(log_dir, ec);
  } else {
    std::printf("chaos: logs and journal kept in %s\n", log_dir.c_str());
  }
}
