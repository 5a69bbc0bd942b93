#include <catch2/catch.hpp>

#include "core_harness.h"
#include "tailcut/core/edge_quorum.h"

using namespace tailcut;
using tailcut::testing::CoreHarness;

TEST_CASE("tasks are placed within executor slots and run to completion") {
  CoreHarness h;
  ExecutorId a = h.Exec(2), b = h.Exec(1);
  auto job = h.core.SubmitJob(CoreHarness::Fanout(5));
  REQUIRE(job.ok());
  h.Drain();
  CHECK(h.launches.size() == 3);  // 2 + 1 slots, nothing queued yet
  CHECK(h.LiveOn(a).size() == 2);
  CHECK(h.LiveOn(b).size() == 1);
  while (!h.live.empty()) h.Finish(h.live.begin()->first);
  REQUIRE(h.finished.count(*job));
  CHECK(h.finished[*job].state == JobState::kSucceeded);
  CHECK(h.launches.size() == 5);
  auto st = h.core.JobStatus(*job);
  REQUIRE(st.ok());
  CHECK(st->committed == 5);
  CHECK(h.recorder.Count(AttemptOutcome::kCommitted) == 5);
}

TEST_CASE("gpu and label demands steer placement") {
  CoreHarness h;
  ExecutorId cpu = h.Exec(4);
  ExecutorId gpu = h.Exec(4, 1, testing::kTestKernels, {{"zone", "edge"}});
  JobDef j;
  TaskDef g;
  g.kernel = "matmul";
  g.gpus = 1;
  TaskDef l;
  l.kernel = "noop";
  l.labels = {{"zone", "edge"}};
  j.tasks = {g, l, g};
  auto id = h.core.SubmitJob(j);
  REQUIRE(id.ok());
  h.Drain();
  // One gpu: task 0 on the gpu executor, task 1 there too (label), task 2 waits.
  REQUIRE(h.launches.size() == 2);
  for (auto& l : h.launches) CHECK(l.executor == gpu);
  CHECK(h.LiveOn(cpu).empty());
  h.Finish(h.launches[0].attempt);
  REQUIRE(h.launches.size() == 3);
  CHECK(h.launches[2].task == 2);
  CHECK(h.launches[2].executor == gpu);
}

TEST_CASE("a job no executor can run is rejected with the reason") {
  CoreHarness h;
  h.Exec(2, 0, {"noop", "sleep"});
  JobDef unknown = CoreHarness::Fanout(3, "frobnicate");
  auto r = h.core.SubmitJob(unknown);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Status::Code::kNotFound);
  CHECK(r.status().message().find("frobnicate") != std::string::npos);
  CHECK(r.status().message().find("noop") != std::string::npos);

  JobDef gpu = CoreHarness::Fanout(1, "noop");
  gpu.templ.gpus = 1;
  auto g = h.core.SubmitJob(gpu);
  REQUIRE_FALSE(g.ok());
  CHECK(g.status().code() == Status::Code::kFailedPrecondition);
  CHECK(g.status().message().find("1 gpu") != std::string::npos);

  CHECK_FALSE(h.core.SubmitJob(JobDef{}).ok());  // no tasks
  JobDef bad_k = CoreHarness::Fanout(3, "noop");
  bad_k.rule.kind = CompletionKind::kKOfN;
  bad_k.rule.k = 4;
  CHECK_FALSE(h.core.SubmitJob(bad_k).ok());
}

TEST_CASE("kernels are opt-in: an executor runs exactly the kernels it lists, none when it lists none") {
  CoreHarness h;
  ExecutorId none = h.Exec(4, 0, {});
  auto r = h.core.SubmitJob(CoreHarness::Fanout(1, "noop"));
  REQUIRE_FALSE(r.ok());  // an empty list is not "any kernel"
  CHECK(r.status().message() == "no executor offers kernel 'noop' (offered: none)");

  ExecutorId plain = h.Exec(4, 0, {"noop", "sleep"});  // started without --allow-shell
  auto shell = h.core.SubmitJob(CoreHarness::Fanout(1, "shell"));
  REQUIRE_FALSE(shell.ok());
  CHECK(shell.status().code() == Status::Code::kNotFound);
  CHECK(shell.status().message() ==
        "no executor runs kernel 'shell' (executors offer it only when started with --allow-shell)");

  auto noop = h.core.SubmitJob(CoreHarness::Fanout(4, "noop"));
  REQUIRE(noop.ok());
  h.Drain();
  CHECK(h.LiveOn(none).empty());
  CHECK(h.LiveOn(plain).size() == 4);

  ExecutorId with_shell = h.Exec(1, 0, {"noop", "shell"});  // started with --allow-shell
  auto ok = h.core.SubmitJob(CoreHarness::Fanout(1, "shell"));
  REQUIRE(ok.ok());
  h.Drain();
  REQUIRE(h.LiveOn(with_shell).size() == 1);
}

TEST_CASE("a shell job accepted before any executor fails after the grace period with the flag in its reason") {
  CoreOptions o;
  o.infeasible_grace_s = 5;
  o.lost_after_s = 0;
  CoreHarness h(o);
  auto job = h.core.SubmitJob(CoreHarness::Fanout(1, "shell"));
  REQUIRE(job.ok());
  h.Exec(2);  // no shell among its kernels
  h.Drain();
  h.clock.Advance(6);
  h.core.Tick();
  h.Drain();
  REQUIRE(h.finished.count(*job));
  CHECK(h.finished[*job].state == JobState::kFailed);
  CHECK(h.finished[*job].reason.find("--allow-shell") != std::string::npos);
}

TEST_CASE("an infeasible job waits for the grace period, then fails but wait_for_resources waits") {
  CoreOptions o;
  o.infeasible_grace_s = 5;
  o.lost_after_s = 0;
  CoreHarness h(o);
  // No executors yet: accepted (executors may still be starting).
  JobDef gpu = CoreHarness::Fanout(1, "noop");
  gpu.templ.gpus = 1;
  auto failing = h.core.SubmitJob(gpu);
  gpu.wait_for_resources = true;
  auto waiting = h.core.SubmitJob(gpu);
  REQUIRE(failing.ok());
  REQUIRE(waiting.ok());
  h.Exec(2);  // cpu only
  h.Drain();
  h.clock.Advance(6);
  h.core.Tick();
  h.Drain();
  REQUIRE(h.finished.count(*failing));
  CHECK(h.finished[*failing].state == JobState::kFailed);
  CHECK(h.finished[*failing].reason.find("gpu") != std::string::npos);
  CHECK_FALSE(h.finished.count(*waiting));
  ExecutorId g = h.Exec(1, 1);
  h.Drain();
  REQUIRE(h.LiveOn(g).size() == 1);
  h.Finish(h.LiveOn(g)[0]);
  CHECK(h.finished[*waiting].state == JobState::kSucceeded);
}

TEST_CASE("the first finisher commits exactly once and other attempts are cancelled") {
  struct CopyEverything : MitigationPolicy {
    std::string_view name() const override { return "copy-all"; }
    void OnTick(const ClusterView& v, std::vector<Proposal>* out) override {
      v.ForEachRunningAttempt([&](const AttemptView& a) {
        if (a.task_live == 1) out->push_back(Proposal::LaunchCopy(a.job, a.task, "test"));
      });
    }
  };
  CoreOptions o;
  o.redundancy_budget = 1.0;
  PolicyChain chain;
  chain.push_back(std::make_unique<CopyEverything>());
  CoreHarness h(o, std::move(chain));
  ExecutorId a = h.Exec(1), b = h.Exec(1);
  JobDef j = CoreHarness::Fanout(1);
  j.stream_results = true;
  auto id = h.core.SubmitJob(j);
  h.Drain();
  REQUIRE(h.launches.size() == 1);
  h.core.Tick();
  h.Drain();
  REQUIRE(h.launches.size() == 2);
  CHECK(h.launches[1].copy);
  CHECK(h.launches[0].executor != h.launches[1].executor);  // never where it already runs
  (void)a;
  (void)b;
  AttemptId first = h.launches[1].attempt, second = h.launches[0].attempt;
  h.Finish(first, 0.5, "copy wins");
  CHECK(h.cancels.size() == 1);
  CHECK(h.cancels[0].attempt == second);
  // A late result from the cancelled attempt changes nothing.
  h.core.AttemptSucceeded(second, "late", 2.0);
  h.Drain();
  REQUIRE(h.commits.size() == 1);
  CHECK(h.commits[0].output == "copy wins");
  CHECK(h.finished[*id].state == JobState::kSucceeded);
  CHECK(h.recorder.Count(AttemptOutcome::kCommitted) == 1);
  CHECK(h.recorder.Count(AttemptOutcome::kSuperseded) == 1);
}

TEST_CASE("k_of_n finishes at k commits and cancels the rest") {
  CoreHarness h;
  h.Exec(10);
  JobDef j = CoreHarness::Fanout(10);
  j.rule.kind = CompletionKind::kKOfN;
  j.rule.k = 7;
  auto id = h.core.SubmitJob(j);
  h.Drain();
  REQUIRE(h.launches.size() == 10);
  for (int i = 0; i < 7; ++i) h.Finish(h.launches[i].attempt);
  REQUIRE(h.finished.count(*id));
  CHECK(h.finished[*id].state == JobState::kSucceeded);
  CHECK(h.cancels.size() == 3);
  CHECK(h.core.LiveAttempts() == 0);
}

TEST_CASE("failed attempts are retried up to max_attempts, then the job fails with the reason") {
  CoreOptions o;
  o.max_attempts = 3;
  CoreHarness h(o);
  h.Exec(1);
  auto id = h.core.SubmitJob(CoreHarness::Fanout(1));
  h.Drain();
  for (int i = 0; i < 3; ++i) {
    REQUIRE(h.live.size() == 1);
    AttemptId a = h.live.begin()->first;
    h.live.clear();
    h.core.AttemptFailed(a, "disk full", 0.1);
    h.Drain();
  }
  REQUIRE(h.finished.count(*id));
  CHECK(h.finished[*id].state == JobState::kFailed);
  CHECK(h.finished[*id].reason.find("disk full") != std::string::npos);
  CHECK(h.finished[*id].reason.find("3 times") != std::string::npos);
  CHECK(h.launches.size() == 3);
}

TEST_CASE("a lost executor's attempts are rescheduled and every task commits once") {
  CoreOptions o;
  o.lost_after_s = 2;
  CoreHarness h(o);
  ExecutorId a = h.Exec(4), b = h.Exec(4);
  auto id = h.core.SubmitJob(CoreHarness::Fanout(8));
  h.Drain();
  REQUIRE(h.LiveOn(a).size() == 4);
  // b keeps heartbeating, a goes silent.
  h.clock.Advance(1.5);
  h.core.ExecutorSeen(b);
  h.clock.Advance(1.0);
  h.core.Tick();
  h.Drain();
  REQUIRE(h.exec_changes.size() == 1);
  CHECK(h.exec_changes[0].executor == a);
  CHECK(h.exec_changes[0].change == ExecutorChangedCmd::Change::kLost);
  CHECK_FALSE(h.core.HasExecutor(a));
  for (auto& [att, l] : std::map<AttemptId, LaunchCmd>(h.live))
    if (l.executor == a) h.live.erase(att);  // they died with a
  while (!h.live.empty()) h.Finish(h.live.begin()->first);
  REQUIRE(h.finished[*id].state == JobState::kSucceeded);
  CHECK(h.recorder.Count(AttemptOutcome::kExecutorLost) == 4);
  std::set<TaskIndex> committed;
  for (auto& r : h.recorder.records)
    if (r.outcome == AttemptOutcome::kCommitted) CHECK(committed.insert(r.task).second);
  CHECK(committed.size() == 8);
}

TEST_CASE(
    "liveness from the heard queue: heard executors stay, a silent one is lost within a quarter past the timeout") {
  CoreOptions o;
  o.lost_after_s = 2;
  CoreHarness h(o);
  std::vector<ExecutorId> fleet;
  for (int i = 0; i < 50; ++i) fleet.push_back(h.Exec(1));
  ExecutorId silent = fleet[17];
  double lost_at = -1;
  // Heard every 0.1 s (many times per queue entry), ticked every 0.1 s.
  for (int step = 1; step <= 40 && lost_at < 0; ++step) {
    h.clock.Advance(0.1);
    for (ExecutorId e : fleet)
      if (e != silent) h.core.ExecutorSeen(e);
    h.core.Tick();
    h.Drain();
    if (!h.exec_changes.empty()) lost_at = step * 0.1;
  }
  REQUIRE(h.exec_changes.size() == 1);
  CHECK(h.exec_changes[0].executor == silent);
  CHECK(lost_at >= 2.0 - 1e-9);  // the clock sums 0.1 steps: 2.0 + an ulp
  CHECK(lost_at <= 2.0 + 2.0 / 4 + 0.1 + 1e-9);
  for (ExecutorId e : fleet) CHECK(h.core.HasExecutor(e) == (e != silent));
  // A longer timeout (a large fleet's) from now on: 3 s of silence is no
  // loss at 4 s, 4.6 s is.
  h.core.SetLostAfter(4);
  h.clock.Advance(3);
  h.core.Tick();
  h.Drain();
  CHECK(h.exec_changes.size() == 1);
  h.clock.Advance(1.6);
  h.core.Tick();
  h.Drain();
  CHECK(h.exec_changes.size() == 1 + fleet.size() - 1);
}

TEST_CASE("cancelling a job stops its attempts and reports it") {
  CoreHarness h;
  h.Exec(2);
  auto id = h.core.SubmitJob(CoreHarness::Fanout(4));
  h.Drain();
  REQUIRE(h.core.CancelJob(*id, "user asked").ok());
  h.Drain();
  CHECK(h.cancels.size() == 2);
  CHECK(h.finished[*id].state == JobState::kCancelled);
  CHECK(h.core.LiveAttempts() == 0);
  CHECK_FALSE(h.core.CancelJob(*id).ok());
  CHECK_FALSE(h.core.CancelJob(999).ok());
}

// job_retention = 0 evicts a job as it finishes: the final status must
// come with the cancel and the JobFinished command, not from JobStatus().
TEST_CASE("a finished job evicted at once still reports its final status") {
  CoreOptions o;
  o.job_retention = 0;
  CoreHarness h(o);
  h.Exec(2);
  auto id = h.core.SubmitJob(CoreHarness::Fanout(4));
  h.Drain();
  auto st = h.core.CancelJob(*id, "user asked");
  REQUIRE(st.ok());
  CHECK(st->id == *id);
  CHECK(st->state == JobState::kCancelled);
  CHECK(st->tasks == 4);
  CHECK_FALSE(h.core.JobStatus(*id).ok());  // evicted
  h.Drain();
  REQUIRE(h.finished.count(*id));
  CHECK(h.finished[*id].status.state == JobState::kCancelled);
  CHECK(h.finished[*id].status.reason == "user asked");
  CHECK(h.finished[*id].status.tasks == 4);
}

TEST_CASE("quorum rounds close at the deadline with enough reports") {
  CoreOptions o;
  o.lost_after_s = 0;
  CoreHarness h(o);
  h.Exec(13);
  JobDef j = CoreHarness::Fanout(13);  // over-select 130% of 10
  j.rule.kind = CompletionKind::kQuorum;
  j.rule.k = 10;
  j.rule.min_count = 6;
  j.rule.deadline_s = 30;
  auto id = h.core.SubmitJob(j);
  h.Drain();
  for (int i = 0; i < 7; ++i) h.Finish(h.launches[i].attempt);
  h.clock.Advance(31);
  h.core.Tick();
  h.Drain();
  REQUIRE(h.finished.count(*id));
  CHECK(h.finished[*id].state == JobState::kSucceeded);
  CHECK(h.finished[*id].reason.find("7 of 13") != std::string::npos);
  CHECK(h.cancels.size() == 6);  // late reports dropped
}

TEST_CASE("the core enforces the redundancy budget whatever policies propose") {
  struct Greedy : MitigationPolicy {
    std::string_view name() const override { return "greedy"; }
    void OnTick(const ClusterView& v, std::vector<Proposal>* out) override {
      v.ForEachRunningAttempt([&](const AttemptView& a) {
        for (int i = 0; i < 5; ++i) out->push_back(Proposal::LaunchCopy(a.job, a.task, "greedy"));
      });
    }
  };
  CoreOptions o;
  o.redundancy_budget = 0.1;  // of 40 slots: 4 copies
  PolicyChain chain;
  chain.push_back(std::make_unique<Greedy>());
  CoreHarness h(o, std::move(chain));
  for (int i = 0; i < 10; ++i) h.Exec(4);
  REQUIRE(h.core.SubmitJob(CoreHarness::Fanout(20)).ok());
  h.Drain();
  h.core.Tick();
  h.Drain();
  size_t copies = 0;
  for (auto& l : h.launches) copies += l.copy;
  CHECK(copies == 4);
}

TEST_CASE("tiny tasks are pipelined beyond slots once their run time is known") {
  CoreHarness h;
  ExecutorId e = h.Exec(2);
  REQUIRE(h.core.SubmitJob(CoreHarness::Fanout(10000, "noop")).ok());
  h.Drain();
  REQUIRE(h.launches.size() == 2);  // run time unknown: only the slots
  h.Finish(h.launches[0].attempt, 1e-6);
  CHECK(h.LiveOn(e).size() == 2);  // one sample is not enough to pipeline
  for (int i = 0; i < 3; ++i) h.Finish(h.LiveOn(e)[0], 1e-6);
  // Now known to be tiny: the executor may queue up to max_queue_per_slot.
  CHECK(h.LiveOn(e).size() == 2 * (1 + h.core.options().max_queue_per_slot));
}

TEST_CASE("an executor's max_queued bounds the pipelining, and a refused attempt is requeued, not failed") {
  CoreOptions o;
  o.max_attempts = 1;  // a refusal counted as a failure would kill the task
  CoreHarness h(o);
  ExecutorDesc d;
  d.name = "edge";
  d.slots = 2;
  d.max_queued = 3;
  d.kernels = {"noop"};
  ExecutorId e = h.core.AddExecutor(d);
  auto job = h.core.SubmitJob(CoreHarness::Fanout(10000, "noop"));
  REQUIRE(job.ok());
  h.Drain();
  h.Finish(h.launches[0].attempt, 1e-6);
  for (int i = 0; i < 3; ++i) h.Finish(h.LiveOn(e)[0], 1e-6);
  CHECK(h.LiveOn(e).size() == 2 + 3);  // not 2 * (1 + max_queue_per_slot)
  AttemptId refused = h.LiveOn(e).back();
  h.live.erase(refused);
  size_t launched = h.launches.size();
  h.core.AttemptDropped(refused, "executor dropped it: executor queue full");
  h.Drain();
  CHECK(h.launches.size() == launched + 1);
  CHECK(h.LiveOn(e).size() == 2 + 3);  // the task went back into the queue and out again
  auto st = h.core.JobStatus(*job);
  REQUIRE(st.ok());
  CHECK(st->failed_attempts == 0);
}

TEST_CASE("long tasks are never queued behind running ones") {
  CoreHarness h;
  ExecutorId e = h.Exec(2);
  REQUIRE(h.core.SubmitJob(CoreHarness::Fanout(10)).ok());
  h.Drain();
  h.Finish(h.launches[0].attempt, 0.5);  // 0.5 s tasks
  CHECK(h.LiveOn(e).size() == 2);
}

TEST_CASE("a quorum round without a deadline closes once every task has reported or failed") {
  CoreOptions o;
  o.max_attempts = 1;
  CoreHarness h(o);
  h.Exec(4);
  JobDef j = CoreHarness::Fanout(4);
  j.rule.kind = CompletionKind::kQuorum;
  j.rule.k = 4;
  j.rule.min_count = 2;
  auto id = h.core.SubmitJob(j);
  h.Drain();
  h.Finish(h.launches[0].attempt);
  h.Finish(h.launches[1].attempt);
  h.core.AttemptFailed(h.launches[2].attempt, "device lost", 0.1);
  h.Drain();
  CHECK_FALSE(h.finished.count(*id));
  h.core.AttemptFailed(h.launches[3].attempt, "device lost", 0.1);
  h.Drain();
  REQUIRE(h.finished.count(*id));
  CHECK(h.finished[*id].state == JobState::kSucceeded);
}

// Admission (issue #11): checked on the task count alone, before the job's
// per-task state is allocated.
TEST_CASE("admission: tasks per job and queued tasks are capped, the latter freed as jobs finish") {
  CoreOptions o;
  o.max_tasks_per_job = 100;
  o.max_queued_tasks = 150;
  CoreHarness h(o);
  h.Exec(1);
  auto big = h.core.SubmitJob(CoreHarness::Fanout(101));
  REQUIRE_FALSE(big.ok());
  CHECK(big.status().code() == Status::Code::kTooLarge);
  CHECK(big.status().message() == "job has 101 tasks; the limit is 100 (core.max_tasks_per_job)");
  CHECK(h.core.CheckAdmission(50'000'000).code() == Status::Code::kTooLarge);
  auto first = h.core.SubmitJob(CoreHarness::Fanout(100));
  REQUIRE(first.ok());
  CHECK(h.core.QueuedTasks() == 100);
  auto busy = h.core.SubmitJob(CoreHarness::Fanout(60));
  REQUIRE_FALSE(busy.ok());
  CHECK(busy.status().code() == Status::Code::kResourceExhausted);
  CHECK(busy.status().message() ==
        "scheduler busy: unfinished jobs hold 100 tasks, and 60 more would exceed 150 (core.max_queued_tasks); "
        "retry later");
  REQUIRE(h.core.SubmitJob(CoreHarness::Fanout(50)).ok());
  REQUIRE(h.core.CancelJob(*first).ok());
  CHECK(h.core.QueuedTasks() == 50);
  CHECK(h.core.SubmitJob(CoreHarness::Fanout(60)).ok());
  // A job larger than the whole queue can never fit: TOO_LARGE, not BUSY.
  o.max_queued_tasks = 10;
  CoreHarness small(o);
  CHECK(small.core.CheckAdmission(11).message() == "job has 11 tasks; the limit is 10 (core.max_queued_tasks)");
}

TEST_CASE("[core] admission caps and max_attempts are range-checked, naming the key") {
  auto load = [](const char* toml) {
    auto c = Config::Parse(toml);
    REQUIRE(c.ok());
    CoreOptions o;
    return LoadCoreOptions(*c, "core", &o);
  };
  CHECK(load("[core]\nmax_tasks_per_job = 2000000\nmax_queued_tasks = 9000000\n").ok());
  CHECK(load("[core]\nmax_tasks_per_job = 0\n").message() == "core.max_tasks_per_job must be in 1..50000000");
  CHECK(load("[core]\nmax_tasks_per_job = 50000001\n").message() == "core.max_tasks_per_job must be in 1..50000000");
  CHECK(load("[core]\nmax_queued_tasks = 0\n").message() == "core.max_queued_tasks must be at least 1");
  CHECK(load("[core]\nmax_attempts = 100000\n").message() == "core.max_attempts must be in 1..1000");
  CHECK(load("[core]\nmax_queue_per_slot = 100000\n").message() == "core.max_queue_per_slot must be at most 4096");
}

namespace {

// Clones every job's tasks at launch with `copies` extra attempts.
struct CloneAll : MitigationPolicy {
  explicit CloneAll(uint32_t n) : copies(n) {}
  std::string_view name() const override { return "clone-all"; }
  void OnJobSubmitted(const ClusterView&, JobId j, std::vector<Proposal>* out) override {
    out->push_back(Proposal::CloneAtLaunch(j, copies, "test"));
  }
  uint32_t copies;
};

}  // namespace

// docs/METRICS.md: the counters /metrics exports.
TEST_CASE("counters: launches by kind, commits, finished jobs, extra machine time, waiting tasks") {
  PolicyChain chain;
  chain.push_back(std::make_unique<CloneAll>(1));
  CoreHarness h({}, std::move(chain));  // min_copies 1: one live copy at a time
  // Nothing registered yet: every task waits for a slot.
  auto id = h.core.SubmitJob(CoreHarness::Fanout(2));
  REQUIRE(id.ok());
  CHECK(h.core.WaitingTasks() == 2);
  h.Exec(2);
  h.Exec(2);
  h.Drain();
  CHECK(h.core.WaitingTasks() == 0);
  const CoreCounters& c = h.core.Counters();
  REQUIRE(h.launches.size() == 3);  // two firsts, one clone (the budget allows one)
  CHECK(c.attempts_first == 2);
  CHECK(c.attempts_copy == 1);
  CHECK(c.attempts_restart == 0);
  const LaunchCmd copy = h.launches[1].copy ? h.launches[1] : h.launches[2];
  const LaunchCmd original = h.launches[0];
  const LaunchCmd other = h.launches[1].copy ? h.launches[2] : h.launches[1];
  REQUIRE(copy.task == original.task);
  // The copy runs 2 s and loses: its 2 s are extra machine time.
  h.core.AttemptStarted(copy.attempt);
  h.clock.Advance(2);
  h.Finish(original.attempt, 2.0);
  CHECK(c.tasks_committed == 1);
  CHECK(c.extra_machine_s == Approx(2.0));
  // A failed attempt (0.5 s) is extra too, and its task's relaunch a restart.
  h.core.AttemptFailed(other.attempt, "boom", 0.5);
  h.core.Tick();
  h.Drain();
  CHECK(c.extra_machine_s == Approx(2.5));
  CHECK(c.attempts_restart == 1);
  REQUIRE(h.launches.size() == 4);
  h.Finish(h.launches[3].attempt, 1.0);
  CHECK(c.tasks_committed == 2);
  CHECK(c.jobs_succeeded == 1);
  CHECK(c.jobs_failed == 0);
  auto cancelled = h.core.SubmitJob(CoreHarness::Fanout(1));
  REQUIRE(cancelled.ok());
  (void)h.core.CancelJob(*cancelled);
  CHECK(c.jobs_cancelled == 1);
}

TEST_CASE("GPU throttle reasons from heartbeats make an executor suspect until they clear") {
  CoreHarness h;
  ExecutorId gpu = h.Exec(1, 1);
  ExecutorId other = h.Exec(1, 1);
  auto health = [&](ExecutorId e) {
    for (const ExecutorStatusInfo& i : h.core.Executors())
      if (i.id == e) return i.health.state;
    FAIL("no executor " << e);
    return NodeHealth::kHealthy;
  };
  h.core.ExecutorSignals(gpu, 0);
  CHECK(health(gpu) == NodeHealth::kHealthy);
  h.clock.Advance(1);
  h.core.ExecutorSignals(gpu, 0x20);  // software thermal slowdown
  CHECK(health(gpu) == NodeHealth::kSuspect);
  CHECK(health(other) == NodeHealth::kHealthy);
  h.core.ExecutorSignals(gpu, 0);
  CHECK(health(gpu) == NodeHealth::kHealthy);
  h.core.ExecutorSignals(99, 0x20);  // an unknown executor: ignored
  CHECK(h.core.Predictors()->GpuThrottled(99) == false);
}

// docs/POLICIES.md, "Side effects": the default chain's clone of a
// one-task shell job, which ran the command twice.
TEST_CASE("clone at launch skips tasks that are not idempotent and the status says so") {
  PolicyChain chain;
  chain.push_back(std::make_unique<CloneAll>(2));
  CoreOptions o;
  o.min_copies = 4;
  CoreHarness h(o, std::move(chain));
  for (int i = 0; i < 3; ++i) h.Exec(1, 0, {"shell", "sleep"});
  auto shell = h.core.SubmitJob(CoreHarness::Fanout(1, "shell"));
  REQUIRE(shell.ok());
  h.Drain();
  REQUIRE(h.launches.size() == 1);
  CHECK_FALSE(h.launches[0].copy);
  CHECK_FALSE(h.launches[0].idempotent);
  CHECK(h.core.JobStatus(*shell)->copies_refused_side_effects == 1);
  h.Finish(h.launches[0].attempt);
  // Marked idempotent, the same job gets its clones.
  JobDef marked = CoreHarness::Fanout(1, "shell");
  marked.idempotent = true;
  auto pure = h.core.SubmitJob(marked);
  REQUIRE(pure.ok());
  h.Drain();
  CHECK(h.launches.size() == 4);
  CHECK(h.launches[1].idempotent);
  CHECK(h.core.JobStatus(*pure)->copies == 2);
  CHECK(h.core.JobStatus(*pure)->copies_refused_side_effects == 0);
}

TEST_CASE("edge quorum: closes at the committed share of what reached the edge, once, with bounded memory") {
  EdgeQuorum q(0.5, /*closed_memory=*/2);
  for (int i = 0; i < 4; ++i) q.Received(7);
  q.Committed(7);
  q.Released(7);
  CHECK_FALSE(q.Close(7));  // 1 of 4
  q.Committed(7);
  q.Released(7);
  auto c = q.Close(7);  // 2 of 4 = ceil(0.5 x 4)
  REQUIRE(c);
  CHECK(c->received == 4);
  CHECK(c->committed == 2);
  CHECK(c->held == 2);
  CHECK_FALSE(q.Close(7));  // closed already
  // Nothing held: nothing to close.
  q.Received(8);
  q.Committed(8);
  q.Released(8);
  CHECK_FALSE(q.Close(8));
  // Off: never closes.
  EdgeQuorum off(0);
  off.Received(1);
  off.Committed(1);
  CHECK_FALSE(off.Close(1));
  // Two more closes push job 7 out of the memory: it may close again.
  for (uint64_t j : {9, 10}) {
    q.Received(j);
    q.Received(j);
    q.Committed(j);
    REQUIRE(q.Close(j));
  }
  CHECK(q.Close(7));
}

// docs/POLICIES.md, "Copies only use idle capacity": a clone never takes a
// slot its own job's next task needs (16 tasks on 16 slots would otherwise
// run in two waves, a clone per task in the first).
TEST_CASE("clones at launch take only the slots their job's own tasks do not need") {
  for (int executors : {4, 6, 8}) {
    DYNAMIC_SECTION(executors << " single-slot executors") {
      PolicyChain chain;
      chain.push_back(std::make_unique<CloneAll>(1));
      CoreOptions o;
      o.min_copies = 8;
      CoreHarness h(o, std::move(chain));
      for (int i = 0; i < executors; ++i) h.Exec(1);
      auto id = h.core.SubmitJob(CoreHarness::Fanout(4));
      REQUIRE(id.ok());
      h.Drain();
      size_t firsts = 0, clones = 0;
      for (const LaunchCmd& l : h.launches) (l.copy ? clones : firsts)++;
      CHECK(firsts == 4);  // every task starts in the first wave
      CHECK(clones == static_cast<size_t>(executors - 4));
    }
  }
}
