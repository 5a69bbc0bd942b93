// Recovery: the journal (SQLite) and replaying it into a fresh core.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <set>

#include "core_harness.h"
#include "recovery.h"
#include "tailcut/server/journal.h"
#include "wire_convert.h"

using namespace tailcut;
using tailcut::testing::CoreHarness;

namespace {

struct TempJournal {
  TempJournal() {
    dir = std::filesystem::temp_directory_path() / ("tailcut-journal-" + std::to_string(getpid()) + "-" +
                                                    std::to_string(++counter));
    std::filesystem::create_directories(dir);
    options.path = (dir / "journal.db").string();
  }
  ~TempJournal() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::unique_ptr<Journal> Open() {
    auto j = Journal::Open(options);
    REQUIRE(j.ok());
    return std::move(j).value();
  }
  static inline int counter = 0;
  std::filesystem::path dir;
  JournalOptions options;
};

// Task t committed by attempt 100 + t on executor 7 in 0.5 s; `output`
// null: a job without kept outputs.
void Committed(Journal& j, JobId job, TaskIndex t, const std::string* output = nullptr) {
  j.TaskCommitted(job, t, 100 + t, 7, 0.5, output);
}

}  // namespace

TEST_CASE("journal: jobs, commits and final statuses survive reopening, epochs count runs") {
  TempJournal tmp;
  {
    auto j = tmp.Open();
    REQUIRE(*j->StartRun() == 1);
    j->JobAccepted(1, "key-1", "spec-1", 1000.0);
    j->JobAccepted(2, "", "spec-2", 1001.0);
    const std::string zero = "zero", two("two\0bytes", 9), one = "one";
    Committed(*j, 1, 0, &zero);
    Committed(*j, 1, 2, &two);
    for (TaskIndex t : {0, 1, 2, 5, 4}) Committed(*j, 2, t);  // ranges: 0-2, 5, 4
    j->JobFinished(2, JobState::kFailed, "task 3 failed", 1002.0, 5, 1, 3);
    CHECK(j->dirty());
    REQUIRE(j->Commit().ok());
    CHECK_FALSE(j->dirty());
    Committed(*j, 1, 1, &one);
    REQUIRE(j->Commit().ok());
  }
  auto j = tmp.Open();
  CHECK(*j->StartRun() == 2);
  std::vector<JournaledJob> jobs;
  REQUIRE(j->Load(&jobs).ok());
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].id == 1);
  CHECK(jobs[0].request_key == "key-1");
  CHECK(jobs[0].spec == "spec-1");
  CHECK(jobs[0].submitted_unix == 1000.0);
  CHECK_FALSE(jobs[0].finished);
  REQUIRE(jobs[0].commits.size() == 3);  // in commit order, outputs intact
  CHECK(jobs[0].commits[0].task == 0);
  CHECK(jobs[0].commits[0].output == "zero");
  CHECK(jobs[0].commits[1].output == std::string("two\0bytes", 9));
  CHECK(jobs[0].commits[2].task == 1);
  CHECK(jobs[0].commits[2].attempt == 101);
  std::vector<TaskIndex> tasks2;
  for (auto& c : jobs[1].commits) tasks2.push_back(c.task);
  CHECK(tasks2 == std::vector<TaskIndex>{0, 1, 2, 5, 4});
  CHECK(jobs[1].commits[0].run_s == 0.5);  // the range's mean
  CHECK(jobs[1].finished);
  CHECK(jobs[1].state == JobState::kFailed);
  CHECK(jobs[1].reason == "task 3 failed");
  CHECK(jobs[1].attempts == 5);
  CHECK(jobs[1].failed_attempts == 3);
}

TEST_CASE("journal: nothing is durable before Commit (group commit), and one scheduler owns it") {
  TempJournal tmp;
  {
    auto writer = tmp.Open();
    REQUIRE(writer->StartRun().ok());
    writer->JobAccepted(1, "k", "s", 1.0);
    REQUIRE(writer->Commit().ok());
    writer->JobAccepted(2, "k2", "s", 1.0);  // buffered, never committed: gone with a crash
    auto second = Journal::Open(tmp.options);
    REQUIRE_FALSE(second.ok());
    CHECK(second.status().message().find("in use") != std::string::npos);
  }
  auto reader = tmp.Open();
  std::vector<JournaledJob> jobs;
  REQUIRE(reader->Load(&jobs).ok());
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].id == 1);
}

TEST_CASE("journal: Prune keeps running jobs and the newest finished ones") {
  TempJournal tmp;
  auto j = tmp.Open();
  for (JobId id = 1; id <= 5; ++id) j->JobAccepted(id, "", "s", 1.0);
  for (JobId id : {1, 2, 4}) j->JobFinished(id, JobState::kSucceeded, "", 2.0, 1, 0, 0);
  Committed(*j, 1, 0);
  REQUIRE(j->Commit().ok());
  REQUIRE(j->Prune(1).ok());
  std::vector<JournaledJob> jobs;
  REQUIRE(j->Load(&jobs).ok());
  std::set<JobId> ids;
  for (auto& x : jobs) ids.insert(x.id);
  CHECK(ids == std::set<JobId>{3, 4, 5});
}

TEST_CASE("journal: Prunable names Prune's jobs as runs, and JobsPruned deletes them in its commit after its writes") {
  TempJournal tmp;
  auto j = tmp.Open();
  for (JobId id = 1; id <= 10; ++id) j->JobAccepted(id, "", "s", 1.0);
  for (JobId id : {1, 2, 3, 5, 6, 8, 9}) j->JobFinished(id, JobState::kSucceeded, "", 2.0, 1, 0, 0);
  REQUIRE(j->Commit().ok());
  // Keep the newest 2 finished (8, 9) and job 2 (an unfinished job's input).
  auto ranges = j->Prunable(2, {2});
  REQUIRE(ranges.ok());
  CHECK(*ranges == std::vector<JobRange>{{1, 1}, {3, 3}, {5, 6}});
  CHECK_FALSE(j->dirty());
  j->JobsPruned(*ranges);
  CHECK(j->dirty());
  // In the same commit: a write for a pruned job goes with it; others stay.
  Committed(*j, 5, 0);
  j->JobAccepted(11, "", "s", 3.0);
  j->JobFinished(7, JobState::kSucceeded, "", 3.0, 1, 0, 0);
  REQUIRE(j->Commit().ok());
  CHECK_FALSE(j->dirty());
  std::vector<JournaledJob> jobs;
  REQUIRE(j->Load(&jobs).ok());
  std::set<JobId> ids;
  for (auto& x : jobs) ids.insert(x.id);
  CHECK(ids == std::set<JobId>{2, 4, 7, 8, 9, 10, 11});
  // Job 5's commit went with it: an id used again starts with none.
  j->JobAccepted(5, "", "s", 4.0);
  REQUIRE(j->Commit().ok());
  jobs.clear();
  REQUIRE(j->Load(&jobs).ok());
  for (auto& x : jobs)
    if (x.id == 5) CHECK(x.commits.empty());
  CHECK(j->Prunable(100).value().empty());
}

TEST_CASE("journal: ranges pruned in one commit may overlap or be huge, and delete exactly the ids in them") {
  TempJournal tmp;
  auto j = tmp.Open();
  for (JobId id = 1; id <= 10; ++id) j->JobAccepted(id, "", "s", 1.0);
  for (JobId id = 1; id <= 10; ++id) Committed(*j, id, 0);
  REQUIRE(j->Commit().ok());
  // Two takeovers' entries applied in one commit, say, and a range far
  // longer than the journal (never expanded id by id).
  j->JobsPruned({{2, 9}, {12, JobId{1} << 50}});
  j->JobsPruned({{4, 5}});
  REQUIRE(j->Commit().ok());
  std::vector<JournaledJob> jobs;
  REQUIRE(j->Load(&jobs).ok());
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].id == 1);
  CHECK(jobs[0].commits.size() == 1);
  CHECK(jobs[1].id == 10);
  CHECK(jobs[1].commits.size() == 1);
}

TEST_CASE("journal: a divisible job's shares survive reopening and go with the job when pruned") {
  TempJournal tmp;
  {
    auto j = tmp.Open();
    j->JobAccepted(1, "", "s", 1.0);
    j->JobAccepted(2, "", "s", 1.0);
    j->SharesFixed(1, {7, 2, 21}, (AttemptId{3} << 40) + 1);
    CHECK(j->dirty());
    REQUIRE(j->Commit().ok());
  }
  auto j = tmp.Open();
  std::vector<JournaledJob> jobs;
  REQUIRE(j->Load(&jobs).ok());
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].share_counts == std::vector<uint64_t>{7, 2, 21});
  CHECK(jobs[0].shares_since == (AttemptId{3} << 40) + 1);
  CHECK(jobs[1].share_counts.empty());
  j->JobFinished(1, JobState::kSucceeded, "", 2.0, 3, 0, 0);
  j->JobFinished(2, JobState::kSucceeded, "", 3.0, 3, 0, 0);
  REQUIRE(j->Commit().ok());
  REQUIRE(j->Prune(1).ok());  // job 1 goes, and its shares with it
  j->JobAccepted(1, "", "s", 4.0);  // were the id reused, no stale shares
  REQUIRE(j->Commit().ok());
  jobs.clear();
  REQUIRE(j->Load(&jobs).ok());
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].share_counts.empty());
}

TEST_CASE("journal: an unwritable path is an error that names it") {
  JournalOptions o;
  o.path = "/nonexistent-dir/for/sure/journal.db";
  auto j = Journal::Open(o);
  REQUIRE_FALSE(j.ok());
  CHECK(j.status().message().find("/nonexistent-dir/for/sure/journal.db") != std::string::npos);
}

TEST_CASE("recovery: a restored job keeps its committed tasks and runs only the rest") {
  CoreHarness h;
  h.Exec(4);
  JobDef def = CoreHarness::Fanout(6);
  def.return_outputs = true;
  std::vector<CommittedOutput> done = {{1, 11, 3, 0.5, "a"}, {4, 14, 3, 0.5, "b"}, {4, 99, 3, 0.5, "dup"}};
  REQUIRE(h.core.RestoreJob(42, def, -5.0, done).ok());
  h.Drain();
  std::set<TaskIndex> launched;
  for (auto& l : h.launches) launched.insert(l.task);
  CHECK(launched == std::set<TaskIndex>{0, 2, 3, 5});
  for (auto& l : std::vector<LaunchCmd>(h.launches)) h.Finish(l.attempt, 0.5, "new");
  REQUIRE(h.finished.count(42));
  CHECK(h.finished[42].state == JobState::kSucceeded);
  auto outs = h.core.JobOutputs(42);
  REQUIRE(outs.ok());
  CHECK(outs->size() == 6);  // one per task: the duplicate journal entry is ignored
  auto st = h.core.JobStatus(42);
  REQUIRE(st.ok());
  CHECK(st->submitted == -5.0);
  // Ids continue after the restored one.
  auto next = h.core.SubmitJob(CoreHarness::Fanout(1));
  REQUIRE(next.ok());
  CHECK(*next == 43);
}

TEST_CASE("recovery: a job whose every task was committed finishes at once, finished jobs answer queries") {
  CoreHarness h;
  JobDef def = CoreHarness::Fanout(2);
  REQUIRE(h.core.RestoreJob(7, def, 0, {{0, 1, 1, 0.1, ""}, {1, 2, 1, 0.1, ""}}).ok());
  h.Drain();
  CHECK(h.launches.empty());
  REQUIRE(h.finished.count(7));
  CHECK(h.finished[7].state == JobState::kSucceeded);

  JobStatusInfo st;
  st.state = JobState::kFailed;
  st.reason = "task 0 failed 3 times";
  st.committed = 1;
  st.attempts = 4;
  JobDef kept = CoreHarness::Fanout(2);
  kept.return_outputs = true;
  REQUIRE(h.core.RestoreFinishedJob(9, kept, st, {{1, 5, 1, 0.1, "out"}}).ok());
  auto got = h.core.JobStatus(9);
  REQUIRE(got.ok());
  CHECK(got->state == JobState::kFailed);
  CHECK(got->reason == "task 0 failed 3 times");
  CHECK(got->attempts == 4);
  REQUIRE(h.core.JobOutputs(9).ok());
  CHECK(h.core.JobOutputs(9)->at(0).output == "out");
  CHECK_FALSE(h.core.RestoreJob(9, kept, 0, {}).ok());  // ids are never reused
  CHECK_FALSE(h.core.RestoreFinishedJob(10, kept, JobStatusInfo{}, {}).ok());  // "running" is not finished
}

TEST_CASE("recovery: reserved ids are never handed out again") {
  CoreHarness h;
  h.Exec(1);
  h.core.ReserveIds(100, (AttemptId{3} << 40) + 1);
  auto id = h.core.SubmitJob(CoreHarness::Fanout(1));
  REQUIRE(id.ok());
  CHECK(*id == 100);
  h.Drain();
  REQUIRE(h.launches.size() == 1);
  CHECK(h.launches[0].attempt == (AttemptId{3} << 40) + 1);
  h.core.ReserveIds(5, 5);  // never backwards
  auto id2 = h.core.SubmitJob(CoreHarness::Fanout(1));
  REQUIRE(id2.ok());
  CHECK(*id2 == 101);
}

TEST_CASE("recovery: a request key is bound to its job's body and a running job's key is never evicted") {
  RequestKeys keys(/*capacity=*/2, /*keep_finished_s=*/100);
  const uint64_t body = RequestKeys::Digest("spec A"), other = RequestKeys::Digest("spec B");
  REQUIRE(body != other);
  keys.Add("alice\nk1", body, 1);
  JobId job = 0;
  CHECK(keys.Find("alice\nk1", body, &job) == RequestKeys::Match::kRetry);
  CHECK(job == 1);
  CHECK(keys.Find("alice\nk1", other, &job) == RequestKeys::Match::kConflict);
  CHECK(keys.Find("bob\nk1", body, &job) == RequestKeys::Match::kNew);  // keys are per owner
  // Thousands of other submits, finished long ago, never push out the running job's key.
  for (JobId j = 2; j < 5000; ++j) {
    keys.Add("bob\nk" + std::to_string(j), other, j);
    keys.Finished(j, 1000.0 + static_cast<double>(j));
  }
  CHECK(keys.Find("alice\nk1", body, &job) == RequestKeys::Match::kRetry);
  // A finished job's key stays keep_finished_s, even over the capacity ...
  keys.Finished(1, 10000);
  keys.Add("bob\nnew", other, 6000);
  keys.Finished(6000, 10050);
  CHECK(keys.Find("alice\nk1", body, &job) == RequestKeys::Match::kRetry);
  // ... and goes once it is older and the capacity is exceeded.
  keys.Add("bob\nlater", other, 6001);
  keys.Finished(6001, 10200);
  CHECK(keys.Find("alice\nk1", body, &job) == RequestKeys::Match::kNew);
  CHECK(keys.size() <= 3);
}

TEST_CASE("journal: Prune keeps the parents it is told of (unfinished jobs run after them)") {
  TempJournal tmp;
  auto j = tmp.Open();
  for (JobId id = 1; id <= 5; ++id) j->JobAccepted(id, "", "s", 1.0);
  for (JobId id : {1, 2, 3, 4}) j->JobFinished(id, JobState::kSucceeded, "", 2.0, 1, 0, 0);
  REQUIRE(j->Commit().ok());
  REQUIRE(j->Prune(1, {2}).ok());
  std::vector<JournaledJob> jobs;
  REQUIRE(j->Load(&jobs).ok());
  std::set<JobId> ids;
  for (auto& x : jobs) ids.insert(x.id);
  CHECK(ids == std::set<JobId>{2, 4, 5});
}

TEST_CASE("recovery: a child taking a finished parent's outputs gets them after a restart, past job_retention") {
  TempJournal tmp;
  auto spec = [](uint32_t tasks, std::vector<JobId> after, bool inputs) {
    wire::JobSpec s;
    s.mutable_template_()->set_kernel("noop");
    s.set_template_count(tasks);
    s.set_return_outputs(true);
    for (JobId p : after) {
      if (!inputs) {
        s.add_after(p);
        continue;
      }
      // Only the input: the scheduler adds its job to `after` (not journaled).
      wire::TaskRef* r = s.mutable_template_()->add_inputs();
      r->set_job_id(p);
      r->set_all_tasks(true);
    }
    return s.SerializeAsString();
  };
  {
    auto j = tmp.Open();
    j->JobAccepted(1, "", spec(2, {}, false), 1.0);
    const std::string a = "out-0", b = "out-1";
    Committed(*j, 1, 0, &a);
    Committed(*j, 1, 1, &b);
    j->JobFinished(1, JobState::kSucceeded, "", 2.0, 2, 0, 0);
    for (JobId id = 2; id <= 4; ++id) {  // finished jobs after the parent: it is the oldest
      j->JobAccepted(id, "", spec(1, {}, false), 1.0);
      j->JobFinished(id, JobState::kSucceeded, "", 2.0, 1, 0, 0);
    }
    j->JobAccepted(5, "", spec(1, {1}, true), 3.0);   // the child, unfinished
    j->JobAccepted(6, "", spec(1, {5}, false), 3.0);  // and its own child, waiting
    REQUIRE(j->Commit().ok());
  }
  CoreOptions o;
  o.job_retention = 1;
  CoreHarness h(o);
  h.Exec(2);
  auto j = tmp.Open();
  RequestKeys keys(16);
  JournalSink writer(j.get());
  auto rec = Recover(*j, h.core, h.clock, JobDefFromJournal, &keys, &writer);
  REQUIRE(rec.ok());
  h.Drain();
  CHECK(h.core.ParentsOfUnfinished() == std::vector<JobId>{1, 5});
  std::vector<ResolvedInput> in;
  REQUIRE(h.core.TaskInputs(5, 0, &in).ok());
  REQUIRE(in.size() == 2);
  CHECK(*in[0].output == "out-0");
  CHECK(*in[1].output == "out-1");
  REQUIRE(h.core.JobStatus(6).ok());
  CHECK(h.core.JobStatus(6)->waiting_for == std::vector<JobId>{5});
  // The journal keeps the parent past its retention of 1 finished job.
  REQUIRE(j->Prune(1, h.core.ParentsOfUnfinished()).ok());
  std::vector<JournaledJob> jobs;
  REQUIRE(j->Load(&jobs).ok());
  std::set<JobId> ids;
  for (auto& x : jobs) ids.insert(x.id);
  CHECK(ids == std::set<JobId>{1, 4, 5, 6});
  // The child runs, then its child; the parent is let go after.
  for (auto& [a, l] : std::map<AttemptId, LaunchCmd>(h.live)) h.Finish(a);
  for (auto& [a, l] : std::map<AttemptId, LaunchCmd>(h.live)) h.Finish(a);
  REQUIRE(h.finished.count(6));
  CHECK(h.finished.at(6).state == JobState::kSucceeded);
  CHECK_FALSE(h.core.JobStatus(1).ok());
}

TEST_CASE("recovery: a job's priority and owner come back from the journal, and so does its share") {
  TempJournal tmp;
  wire::JobSpec spec;
  spec.mutable_template_()->set_kernel("sleep");
  spec.set_template_count(3);
  spec.set_priority(9);
  spec.set_owner("user:ann");
  {
    auto j = tmp.Open();
    REQUIRE(j->StartRun().ok());
    j->JobAccepted(1, "", spec.SerializeAsString(), 1000.0);
    REQUIRE(j->Commit().ok());
  }
  auto j = tmp.Open();
  CoreHarness h;
  h.Exec(2);
  RequestKeys keys(4);
  JournalSink writer(j.get());
  REQUIRE(Recover(*j, h.core, h.clock, &JobDefFromJournal, &keys, &writer).ok());
  h.Drain();
  auto st = h.core.JobStatus(1);
  REQUIRE(st.ok());
  CHECK(st->priority == 9);
  CHECK(st->owner == "user:ann");
  auto shares = h.core.OwnerShares();
  REQUIRE(shares.size() == 1);
  CHECK(shares[0].owner == "user:ann");
  CHECK(shares[0].slots == 2);  // its relaunched tasks hold the fleet's two slots
}

// Issue 32: the journal says which executor identity holds each attempt, so
// a second executor offering the same kernel cannot adopt it after a restart.
TEST_CASE("recovery: only the identity a journaled launch names adopts the attempt after a restart") {
  TempJournal tmp;
  wire::JobSpec spec;
  spec.mutable_template_()->set_kernel("sleep");
  spec.set_template_count(3);
  CoreOptions o;
  o.lost_after_s = 0;  // no restore hold, no heartbeats: the test drives every step
  AttemptId a1 = 0, a2 = 0;
  {  // run 1: x runs tasks 1 and 2 when the scheduler dies
    auto j = tmp.Open();
    CoreHarness h(o);
    JournalSink writer(j.get());
    h.core.AddObserver(&writer);
    RequestKeys keys(4);
    REQUIRE(Recover(*j, h.core, h.clock, &JobDefFromJournal, &keys, &writer).ok());
    ExecutorId x = h.ExecAs("x", 2);
    auto def = JobDefFromJournal(spec.SerializeAsString());
    REQUIRE(def.ok());
    JobId id = h.Submit(*def);
    j->JobAccepted(id, "", spec.SerializeAsString(), 1.0);
    REQUIRE(h.launches.size() == 2);
    h.Finish(h.launches[0].attempt);  // launched and ended in one group commit: never written
    REQUIRE(h.launches.size() == 3);
    a1 = h.launches[1].attempt;
    a2 = h.launches[2].attempt;
    CHECK(h.core.ExecutorOfAttempt(a2) == x);
    REQUIRE(j->Commit().ok());
    std::vector<JournaledLaunch> rows;
    uint32_t since = 0;
    REQUIRE(j->LoadLaunches(&rows, &since).ok());
    REQUIRE(rows.size() == 2);
    CHECK(since == 1);
    CHECK((rows[0].attempt == a1 && rows[0].task == 1 && rows[0].identity == "x"));
    CHECK((rows[1].attempt == a2 && rows[1].task == 2 && rows[1].job == id));
  }
  // Run 2: y, offering the same kernel, registers first and claims both.
  auto j = tmp.Open();
  CoreHarness h(o);
  JournalSink writer(j.get());
  h.core.AddObserver(&writer);
  RequestKeys keys(4);
  auto rec = Recover(*j, h.core, h.clock, &JobDefFromJournal, &keys, &writer);
  REQUIRE(rec.ok());
  CHECK(rec->launches == 2);
  ExecutorId y = h.ExecAs("y", 2);
  CHECK(h.core.AdoptAttempt(a1, 1, 1, y, true).code() == Status::Code::kPermissionDenied);
  CHECK_FALSE(h.core.CommitOrphanResult(1, 2, a2, y, "forged", 1.0));
  CHECK(h.core.Counters().reports_refused == 2);
  ExecutorId x = h.ExecAs("x", 2);
  REQUIRE(h.core.AdoptAttempt(a1, 1, 1, x, true).ok());
  CHECK(h.core.CommitOrphanResult(1, 2, a2, x, "true", 1.0));
  h.Drain();
  CHECK(h.launches.empty());  // nothing ran twice: y got nothing of task 1 or 2
  h.Finish(a1);
  REQUIRE(h.finished.count(1));
  CHECK(h.finished.at(1).state == JobState::kSucceeded);
  REQUIRE(j->Commit().ok());
  // Ended attempts and finished jobs leave no launch rows.
  std::vector<JournaledLaunch> rows;
  uint32_t since = 0;
  REQUIRE(j->LoadLaunches(&rows, &since).ok());
  CHECK(rows.empty());
  CHECK(since == 1);
}

// Issue 41: launches are written many to a statement (32) and the ended
// ones deleted as ranges of ids; which rows a commit leaves must not
// depend on how they were grouped.
TEST_CASE("journal: launches written in groups, ended ones dropped by ranges, leave exactly the live rows") {
  TempJournal tmp;
  auto j = tmp.Open();
  std::set<AttemptId> live;
  const std::string x = "key-x\nx", y = "key-y\ny";
  for (AttemptId a = 1; a <= 70; ++a) {  // two full statements and 6 rows alone
    j->AttemptLaunched(a, 7, static_cast<TaskIndex>(a), a % 3 ? x : y);
    live.insert(a);
  }
  j->AttemptEnded(3);  // ended before the commit: never written
  live.erase(3);
  REQUIRE(j->Commit().ok());
  // Ended in a later turn, out of order: the runs 1-2, 4-10, 20-40 and 70,
  // around 15 and 50 (still live).
  std::vector<AttemptId> ended = {40, 1, 70, 2};
  for (AttemptId a = 4; a <= 10; ++a) ended.push_back(a);
  for (AttemptId a = 20; a <= 39; ++a) ended.push_back(a);
  for (AttemptId a : ended) {
    j->AttemptEnded(a);
    live.erase(a);
  }
  j->AttemptLaunched(71, 8, 0, y);  // and one launched in the same turn
  live.insert(71);
  REQUIRE(j->Commit().ok());
  std::vector<JournaledLaunch> rows;
  uint32_t since = 0;
  REQUIRE(j->LoadLaunches(&rows, &since).ok());
  std::set<AttemptId> got;
  for (const JournaledLaunch& r : rows) {
    got.insert(r.attempt);
    CHECK(r.job == (r.attempt == 71 ? 8u : 7u));
    CHECK(r.identity == (r.attempt == 71 || r.attempt % 3 == 0 ? y : x));
    if (r.attempt != 71) CHECK(r.task == r.attempt);
  }
  CHECK(got == live);
  CHECK(got.count(15) == 1);
  CHECK(got.count(50) == 1);
}
