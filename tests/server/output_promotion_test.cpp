// Attempt-scoped output (docs/JOBS.md, "Output directories"): the core
// promotes exactly the committed attempt's directory, once per task, and a
// job with output_dir succeeds only when every task's output is in place,
// also after a restart.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "core_harness.h"
#include "tailcut/server/journal.h"

using namespace tailcut;
using tailcut::testing::CoreHarness;

namespace {

JobDef OutputJob(uint32_t n, std::string dir = "/data/out") {
  JobDef j = CoreHarness::Fanout(n, "noop");
  j.output_dir = std::move(dir);
  return j;
}

std::string SubmitError(JobDef def) {
  CoreHarness h;
  h.Exec(1);
  auto id = h.core.SubmitJob(std::move(def));
  return id.ok() ? "" : id.status().message();
}

}  // namespace

TEST_CASE("output_dir: absolute, in normal form and with rule all, or the submit is refused saying why") {
  CHECK(SubmitError(OutputJob(1)) == "");
  CHECK(SubmitError(OutputJob(1, "out")) == "output_dir 'out' must be an absolute path");
  CHECK(SubmitError(OutputJob(1, "/data/../out")) == "output_dir '/data/../out' is not in normal form; write '/out'");
  CHECK(SubmitError(OutputJob(1, "/data/out/")) == "output_dir '/data/out/' is not in normal form; write '/data/out'");
  CHECK(SubmitError(OutputJob(1, "/")) == "output_dir must not be '/'");
  JobDef k = OutputJob(3);
  k.rule.kind = CompletionKind::kKOfN;
  k.rule.k = 2;
  CHECK(SubmitError(k) == "output_dir needs rule = all: the job succeeds once every task's output is in place");
}

TEST_CASE("output_dir: each commit asks for one promotion of the committed attempt, the job waits for all") {
  CoreHarness h;
  ExecutorId e = h.Exec(2);
  auto id = h.core.SubmitJob(OutputJob(2));
  REQUIRE(id.ok());
  h.Drain();
  REQUIRE(h.launches.size() == 2);
  const LaunchCmd first = h.launches[0], second = h.launches[1];
  h.Finish(first.attempt);
  REQUIRE(h.promotes.size() == 1);
  CHECK(h.promotes[0].job == *id);
  CHECK(h.promotes[0].task == first.task);
  CHECK(h.promotes[0].attempt == first.attempt);
  CHECK(h.promotes[0].executor == e);
  CHECK(h.promotes[0].host == "host-1");
  CHECK(h.promotes[0].output_dir == "/data/out");
  h.Finish(second.attempt);
  REQUIRE(h.promotes.size() == 2);
  CHECK(h.core.PendingPromotions().size() == 2);
  // Every task committed, but the outputs are not in place yet.
  CHECK_FALSE(h.finished.count(*id));
  CHECK(h.core.JobStatus(*id)->committed == 2);

  CHECK_FALSE(h.core.OutputPromoted(*id, first.task, second.attempt));  // not the committed attempt
  CHECK(h.core.OutputPromoted(*id, first.task, first.attempt));
  CHECK_FALSE(h.core.OutputPromoted(*id, first.task, first.attempt));  // a repeated answer changes nothing
  h.Drain();
  CHECK_FALSE(h.finished.count(*id));
  CHECK(h.core.OutputPromoted(*id, second.task, second.attempt));
  h.Drain();
  REQUIRE(h.finished.count(*id));
  CHECK(h.finished[*id].state == JobState::kSucceeded);
  CHECK(h.core.PendingPromotions().empty());
  CHECK(h.promotes.size() == 2);  // one per task
}

// Clones every task of a job once at launch (as the clone policy does).
class CloneOnce final : public MitigationPolicy {
 public:
  std::string_view name() const override { return "clone_once"; }
  void OnJobSubmitted(const ClusterView&, JobId j, std::vector<Proposal>* out) override {
    out->push_back(Proposal::CloneAtLaunch(j, 1, "test"));
  }
};

TEST_CASE("output_dir: of racing copies only the committed one is promoted, and a failed promotion fails the job") {
  PolicyChain chain;
  chain.push_back(std::make_unique<CloneOnce>());
  CoreHarness h({}, std::move(chain));
  h.Exec(1);
  h.Exec(1);
  auto id = h.core.SubmitJob(OutputJob(1));
  REQUIRE(id.ok());
  h.Drain();
  REQUIRE(h.launches.size() == 2);  // the task and its clone, on both executors
  const LaunchCmd winner = h.launches[1], loser = h.launches[0];
  h.Finish(winner.attempt);
  h.Finish(loser.attempt);  // too late: the task is committed
  REQUIRE(h.promotes.size() == 1);
  CHECK(h.promotes[0].attempt == winner.attempt);
  CHECK(h.promotes[0].executor == winner.executor);
  CHECK(std::count_if(h.cancels.begin(), h.cancels.end(), [&](const CancelCmd& c) { return c.attempt == loser.attempt; }) == 1);
  CHECK(h.core.PromotionFailed(*id, 0, winner.attempt, "no space left on device"));
  h.Drain();
  REQUIRE(h.finished.count(*id));
  CHECK(h.finished[*id].state == JobState::kFailed);
  CHECK(h.finished[*id].reason == "task 0's output could not be promoted: no space left on device");
}

TEST_CASE("output_dir: a restored job resends its pending promotions and succeeds once they are done") {
  CoreHarness h;
  h.Exec(2);
  JobDef def = OutputJob(2);
  // Both tasks committed before the crash; task 1's directory was promoted, task 0's not yet.
  REQUIRE(h.core.RestoreJob(5, def, 0, {{0, 11, 3, 0.1, ""}, {1, 12, 3, 0.1, ""}}, {}, 0, {{0, 11, "host-a"}}).ok());
  h.Drain();
  CHECK(h.launches.empty());
  REQUIRE(h.promotes.size() == 1);
  CHECK(h.promotes[0].task == 0);
  CHECK(h.promotes[0].attempt == 11);
  CHECK(h.promotes[0].executor == 0);
  CHECK(h.promotes[0].host == "host-a");
  CHECK_FALSE(h.finished.count(5));
  CHECK(h.core.OutputPromoted(5, 0, 11));
  h.Drain();
  REQUIRE(h.finished.count(5));
  CHECK(h.finished[5].state == JobState::kSucceeded);

  // A finished (failed) job's pending promotions go out again too.
  JobStatusInfo st;
  st.state = JobState::kFailed;
  REQUIRE(h.core.RestoreFinishedJob(6, OutputJob(3), st, {}, {{2, 21, "host-b"}}).ok());
  h.Drain();
  REQUIRE(h.promotes.size() == 2);
  CHECK(h.promotes[1].job == 6);
  CHECK(h.core.OutputPromoted(6, 2, 21));
}

TEST_CASE("journal: pending promotions survive reopening until answered, and go with a pruned job") {
  const auto dir = std::filesystem::temp_directory_path() / ("tailcut-promote-journal-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  JournalOptions o;
  o.path = (dir / "journal.db").string();
  {
    auto j = Journal::Open(o);
    REQUIRE(j.ok());
    (*j)->JobAccepted(1, "", "s", 1.0);
    (*j)->PromotionPending(1, 0, 100, "h1");
    (*j)->PromotionPending(1, 1, 101, "h1");
    (*j)->PromotionPending(1, 2, 102, "h2");
    (*j)->OutputPromoted(1, 2);  // answered in the same group commit: no row
    REQUIRE((*j)->Commit().ok());
    (*j)->OutputPromoted(1, 1);
    REQUIRE((*j)->Commit().ok());
  }
  auto j = Journal::Open(o);
  REQUIRE(j.ok());
  std::vector<JournaledJob> jobs;
  REQUIRE((*j)->Load(&jobs).ok());
  REQUIRE(jobs.size() == 1);
  REQUIRE(jobs[0].promotions.size() == 1);
  CHECK(jobs[0].promotions[0].task == 0);
  CHECK(jobs[0].promotions[0].attempt == 100);
  CHECK(jobs[0].promotions[0].host == "h1");
  (*j)->JobFinished(1, JobState::kFailed, "x", 2.0, 1, 0, 1);
  REQUIRE((*j)->Commit().ok());
  REQUIRE((*j)->Prune(0).ok());
  (*j)->JobAccepted(1, "", "s", 3.0);  // were the id reused, no stale promotion
  REQUIRE((*j)->Commit().ok());
  jobs.clear();
  REQUIRE((*j)->Load(&jobs).ok());
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].promotions.empty());
  j = Status::Internal("closed");  // closes the journal before its folder goes
  std::filesystem::remove_all(dir);
}
