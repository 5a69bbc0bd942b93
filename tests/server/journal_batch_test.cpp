// One group commit as bytes (scheduler/server/durability/journal_batch.h):
// a batch replayed into a journal writes what the same calls on the journal
// write; a malformed batch writes nothing.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "journal_batch.h"

namespace tailcut {
namespace {

struct TempDir {
  TempDir() {
    path = std::filesystem::temp_directory_path() / ("tailcut-batch-" + std::to_string(getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::unique_ptr<Journal> Open(const std::string& name) {
    auto j = Journal::Open(JournalOptions{(path / name).string(), false});
    REQUIRE(j.ok());
    return std::move(*j);
  }
  std::filesystem::path path;
};

// Every kind of write, in one turn.
void WriteAll(JournalWriter* w) {
  const std::string output("out\0put", 7), host = "host-a";
  w->JobAccepted(7, "key-7", std::string("spec\0bytes", 10), 1234.5);
  w->JobAccepted(8, "", "spec-8", 1235.0);
  w->SharesFixed(7, {3, 4, 5}, 40);
  w->TaskCommitted(7, 0, 41, 2, 0.25, &output);
  w->TaskCommitted(8, 0, 50, 3, 1.0, nullptr);
  w->TaskCommitted(8, 1, 51, 3, 3.0, nullptr);
  w->PromotionPending(7, 0, 41, host);
  w->PromotionPending(7, 1, 42, host);
  w->OutputPromoted(7, 1);
  w->AttemptLaunched(60, 8, 2, "exec-identity");
  w->AttemptLaunched(61, 8, 3, "other");
  w->AttemptEnded(61);
  w->JobFinished(8, JobState::kFailed, "a reason", 1240.0, 9, 2, 1);
  w->RunStarted(5);  // a replicated leader's run
}

void Loaded(Journal* j, std::vector<JournaledJob>* jobs, std::vector<JournaledLaunch>* launches) {
  REQUIRE(j->Load(jobs).ok());
  uint32_t since = 0;
  REQUIRE(j->LoadLaunches(launches, &since).ok());
  CHECK(since == 5);  // RunStarted(5): the first run that journaled launches
}

TEST_CASE("a journal batch replays into a journal as the same calls would write") {
  TempDir dir;
  auto direct = dir.Open("direct.db");
  WriteAll(direct.get());
  REQUIRE(direct->Commit().ok());

  JournalBatch batch;
  WriteAll(&batch);
  CHECK(batch.records() == 14);
  std::string bytes = batch.Take();
  CHECK(batch.empty());
  auto replayed = dir.Open("replayed.db");
  REQUIRE(ApplyJournalBatch(bytes, replayed.get()).ok());
  REQUIRE(replayed->Commit().ok());

  std::vector<JournaledJob> a, b;
  std::vector<JournaledLaunch> la, lb;
  Loaded(direct.get(), &a, &la);
  Loaded(replayed.get(), &b, &lb);
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 2);
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(b[i].id == a[i].id);
    CHECK(b[i].request_key == a[i].request_key);
    CHECK(b[i].spec == a[i].spec);
    CHECK(b[i].submitted_unix == a[i].submitted_unix);
    CHECK(b[i].finished == a[i].finished);
    CHECK(b[i].state == a[i].state);
    CHECK(b[i].reason == a[i].reason);
    CHECK(b[i].failed_attempts == a[i].failed_attempts);
    CHECK(b[i].share_counts == a[i].share_counts);
    CHECK(b[i].shares_since == a[i].shares_since);
    REQUIRE(b[i].commits.size() == a[i].commits.size());
    for (size_t k = 0; k < a[i].commits.size(); ++k) {
      CHECK(b[i].commits[k].task == a[i].commits[k].task);
      CHECK(b[i].commits[k].output == a[i].commits[k].output);
      CHECK(b[i].commits[k].run_s == a[i].commits[k].run_s);
    }
    REQUIRE(b[i].promotions.size() == a[i].promotions.size());
  }
  CHECK(a[0].spec == std::string("spec\0bytes", 10));
  CHECK(a[0].promotions.size() == 1);
  CHECK(a[1].state == JobState::kFailed);
  REQUIRE(lb.size() == 1);
  CHECK(lb[0].attempt == 60);
  CHECK(lb[0].identity == "exec-identity");
  // The next run on either is 6; an older epoch never lowers it.
  replayed->RunStarted(2);
  REQUIRE(replayed->Commit().ok());
  CHECK(direct->StartRun().value() == 6);
  CHECK(replayed->StartRun().value() == 6);
}

TEST_CASE("a malformed journal batch is refused whole") {
  TempDir dir;
  auto j = dir.Open("j.db");
  JournalBatch batch;
  WriteAll(&batch);
  const std::string bytes = batch.Take();
  for (size_t cut : {size_t{0}, size_t{3}, size_t{6}, bytes.size() / 2, bytes.size() - 1}) {
    INFO("cut at " << cut);
    CHECK(ApplyJournalBatch(std::string_view(bytes).substr(0, cut), j.get()).code() == Status::Code::kInvalidArgument);
    CHECK_FALSE(j->dirty());
  }
  std::string unknown = bytes;
  unknown[5] = 'Z';  // the first record's kind: a newer build's, say
  const Status refused = ApplyJournalBatch(unknown, j.get());
  CHECK(refused.code() == Status::Code::kInvalidArgument);
  CHECK(refused.message().find("kind 'Z'") != std::string::npos);
  CHECK(refused.message().find("same version") != std::string::npos);
  CHECK_FALSE(j->dirty());
  // An empty batch (the header alone) is valid and writes nothing.
  CHECK(ApplyJournalBatch(JournalBatch().bytes(), j.get()).ok());
  CHECK_FALSE(j->dirty());
}

TEST_CASE("a journal batch carries pruned jobs as ranges of ids, and refuses ranges out of order") {
  TempDir dir;
  auto j = dir.Open("pruned.db");
  for (JobId id = 1; id <= 7; ++id) {
    j->JobAccepted(id, "", "spec", 1.0);
    j->JobFinished(id, JobState::kSucceeded, "", 2.0, 1, 0, 0);
  }
  REQUIRE(j->Commit().ok());
  const JobId far = uint64_t{1} << 40;  // a late epoch's ids: a range far from the one before
  JournalBatch batch;
  batch.JobsPruned({{1, 2}, {4, 5}, {far, far + 3}});
  CHECK(batch.records() == 1);
  const std::string bytes = batch.Take();
  CHECK(bytes.size() < 20);
  REQUIRE(ApplyJournalBatch(bytes, j.get()).ok());
  REQUIRE(j->Commit().ok());
  std::vector<JournaledJob> jobs;
  REQUIRE(j->Load(&jobs).ok());
  REQUIRE(jobs.size() == 3);
  CHECK(jobs[0].id == 3);
  CHECK(jobs[1].id == 6);
  CHECK(jobs[2].id == 7);

  for (std::vector<JobRange> bad : {std::vector<JobRange>{{4, 5}, {5, 6}}, std::vector<JobRange>{{4, 5}, {1, 2}}}) {
    batch.JobsPruned(bad);
    CHECK(ApplyJournalBatch(batch.Take(), j.get()).code() == Status::Code::kInvalidArgument);
    CHECK_FALSE(j->dirty());
  }
}

}  // namespace
}  // namespace tailcut

namespace tailcut {
namespace {

// Version 1 (fixed-width), as Raft logs written before version 2 hold it.
std::string V1Batch() {
  std::string b = {'T', 'C', 'J', 'B', 1};
  auto u = [&](uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) b.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  auto str = [&](const std::string& s) {
    u(s.size(), 4);
    b += s;
  };
  auto f = [&](double v) {
    uint64_t x;
    std::memcpy(&x, &v, sizeof x);
    u(x, 8);
  };
  b.push_back('A'), u(9, 8), str("key-9"), str("spec-9"), f(100.5);
  b.push_back('L'), u(70, 8), u(9, 8), u(0, 4), str("exec-a");
  b.push_back('L'), u(71, 8), u(9, 8), u(1, 4), str("exec-a");
  b.push_back('E'), u(70, 8);
  b.push_back('T'), u(9, 8), u(0, 4), u(70, 8), u(4, 8), f(0.5), u(0, 1);
  return b;
}

TEST_CASE("a journal batch of version 1 (fixed-width) still replays") {
  TempDir dir;
  auto j = dir.Open("v1.db");
  REQUIRE(ApplyJournalBatch(V1Batch(), j.get()).ok());
  REQUIRE(j->Commit().ok());
  std::vector<JournaledJob> jobs;
  REQUIRE(j->Load(&jobs).ok());
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].id == 9);
  CHECK(jobs[0].request_key == "key-9");
  REQUIRE(jobs[0].commits.size() == 1);
  CHECK(jobs[0].commits[0].task == 0);
  CHECK(jobs[0].commits[0].run_s == 0.5);
  std::vector<JournaledLaunch> launches;
  uint32_t since = 0;
  REQUIRE(j->LoadLaunches(&launches, &since).ok());
  REQUIRE(launches.size() == 1);
  CHECK(launches[0].attempt == 71);
  CHECK(launches[0].task == 1);
  CHECK(launches[0].identity == "exec-a");
}

// The replicated log's size per task (docs/RELIABILITY.md, "Single
// scheduler vs three replicas"): a no-op task's launch, end and commit.
TEST_CASE("a journal batch takes about 25 bytes per no-op task, ids far apart included") {
  TempDir dir;
  JournalBatch batch;
  const std::string identity(64, 'k');                                         // a key and a name
  const uint64_t job = (uint64_t{1} << 40) + 5, first = (uint64_t{77} << 32);  // a late epoch's attempt ids
  for (uint32_t t = 0; t < 1000; ++t) {
    batch.AttemptLaunched(first + t, job, t, identity + std::to_string(t % 2));
    batch.AttemptEnded(first + t);
    batch.TaskCommitted(job, t, first + t, 3, 0.001 * t, nullptr);
  }
  const std::string bytes = batch.Take();
  INFO(bytes.size() << " bytes");
  CHECK(bytes.size() < 1000 * 26 + 200);
  auto j = dir.Open("sized.db");
  j->JobAccepted(job, "", "spec", 1.0);
  REQUIRE(ApplyJournalBatch(bytes, j.get()).ok());
  REQUIRE(j->Commit().ok());
  std::vector<JournaledJob> jobs;
  REQUIRE(j->Load(&jobs).ok());
  REQUIRE(jobs.size() == 1);
  REQUIRE(jobs[0].commits.size() == 1000);
  CHECK(jobs[0].commits[999].task == 999);
  // An identity index beyond the batch's table is malformed.
  std::string bad = {'T', 'C', 'J', 'B', 2, 'L', 2, 2, 0, 5};
  CHECK_FALSE(ApplyJournalBatch(bad, j.get()).ok());
}

}  // namespace
}  // namespace tailcut
