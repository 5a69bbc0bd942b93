// Memory requests and multi-GPU tasks (issue 26, "Resources people ask
// for"): placement never lets the requests of an executor's attempts exceed
// its memory or GPUs, queued (pipelined) attempts and copies included, and a
// task no executor could ever hold fails its job with the reason.
#include <catch2/catch.hpp>

#include <memory>

#include "core_harness.h"

using namespace tailcut;
using tailcut::testing::CoreHarness;

namespace {

ExecutorId ExecWith(CoreHarness& h, const std::string& name, uint32_t slots, uint64_t memory_mb, uint32_t gpus = 0) {
  ExecutorDesc d;
  d.name = name;
  d.slots = slots;
  d.gpus = gpus;
  d.memory_mb = memory_mb;
  d.kernels = testing::kTestKernels;
  return h.core.AddExecutor(d);
}

JobDef Asking(uint32_t n, uint64_t memory_mb, uint32_t gpus = 0) {
  JobDef j = CoreHarness::Fanout(n, "sleep");
  j.templ.memory_mb = memory_mb;
  j.templ.gpus = gpus;
  return j;
}

// Sum of the memory requests of the attempts live on each executor.
std::map<ExecutorId, uint64_t> MemoryInUse(const CoreHarness& h, uint64_t per_attempt) {
  std::map<ExecutorId, uint64_t> use;
  for (auto& [id, l] : h.live) use[l.executor] += per_attempt;
  return use;
}

}  // namespace

TEST_CASE("memory requests never add up past an executor's memory") {
  CoreHarness h;
  ExecutorId small = ExecWith(h, "small", 8, 1000), big = ExecWith(h, "big", 8, 4000);
  h.Drain();
  JobId job = h.Submit(Asking(20, 900));
  // small holds one 900 MB attempt though it has 8 slots; big holds four.
  CHECK(h.LiveOn(small).size() == 1);
  CHECK(h.LiveOn(big).size() == 4);
  for (auto& [e, mb] : MemoryInUse(h, 900)) CHECK(mb <= (e == small ? 1000u : 4000u));
  // As attempts finish the freed memory is reused, never exceeded.
  for (int round = 0; round < 30 && !h.live.empty(); ++round) {
    h.Finish(h.live.begin()->first);
    for (auto& [e, mb] : MemoryInUse(h, 900)) CHECK(mb <= (e == small ? 1000u : 4000u));
  }
  REQUIRE(h.finished.count(job));
  CHECK(h.finished[job].state == JobState::kSucceeded);
}

TEST_CASE("tasks without a request fill the slots memory-heavy tasks leave") {
  CoreHarness h;
  ExecutorId e = ExecWith(h, "e", 4, 1000);
  h.Drain();
  h.Submit(Asking(3, 1000));
  CHECK(h.LiveOn(e).size() == 1);
  h.Submit(CoreHarness::Fanout(5));  // no request: the three free slots
  CHECK(h.LiveOn(e).size() == 4);
}

TEST_CASE("an executor that does not say its memory is not checked") {
  CoreHarness h;
  ExecutorId e = ExecWith(h, "unsaid", 4, 0);
  h.Drain();
  h.Submit(Asking(4, 1u << 20));
  CHECK(h.LiveOn(e).size() == 4);
}

TEST_CASE("queued (pipelined) attempts hold their memory too") {
  CoreOptions o;
  o.pipeline_s = 1.0;  // tiny tasks queue per slot after a few commits
  CoreHarness h(o);
  ExecutorId e = ExecWith(h, "e", 1, 2000);
  h.Drain();
  JobId job = h.Submit(Asking(200, 500));
  // Commit enough quick attempts that the job pipelines.
  for (int i = 0; i < 20; ++i) {
    REQUIRE_FALSE(h.LiveOn(e).empty());
    for (AttemptId a : h.LiveOn(e)) h.Finish(a, 0.001);
  }
  // Pipelining would queue hundreds per slot; memory caps it at 4 x 500 MB.
  CHECK(h.LiveOn(e).size() == 4);
  CHECK_FALSE(h.finished.count(job));
}

TEST_CASE("a task asking for more memory than any executor has fails its job, or waits") {
  CoreOptions o;
  o.infeasible_grace_s = 0;
  CoreHarness h(o);
  ExecWith(h, "a", 4, 1000);
  ExecWith(h, "b", 4, 3000);
  h.Drain();
  auto refused = h.core.SubmitJob(Asking(1, 4000));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("4000 MB of memory (the most any executor has: 3000 MB)") != std::string::npos);
  JobDef waits = Asking(1, 4000);
  waits.wait_for_resources = true;
  JobId w = h.Submit(waits);
  CHECK(h.live.empty());
  ExecutorId big = ExecWith(h, "c", 1, 8000);
  h.Drain();
  CHECK(h.LiveOn(big).size() == 1);
  CHECK_FALSE(h.finished.count(w));
}

TEST_CASE("absurd memory requests are refused at submission") {
  CoreHarness h;
  ExecWith(h, "a", 1, 0);
  h.Drain();
  auto r = h.core.SubmitJob(Asking(1, kMaxMemoryMb + 1));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("2^40") != std::string::npos);
  CHECK(h.core.SubmitJob(Asking(1, kMaxMemoryMb)).ok());
}

TEST_CASE("a multi-gpu task takes that many of an executor's gpus") {
  CoreHarness h;
  ExecutorId four = ExecWith(h, "four", 8, 0, 4), two = ExecWith(h, "two", 8, 0, 2);
  h.Drain();
  JobId job = h.Submit(Asking(5, 0, 2));
  // 4 gpus hold two 2-gpu attempts, 2 gpus hold one: three run, two wait.
  CHECK(h.LiveOn(four).size() == 2);
  CHECK(h.LiveOn(two).size() == 1);
  h.Finish(h.LiveOn(two)[0]);
  CHECK(h.LiveOn(two).size() == 1);
  CHECK(h.LiveOn(four).size() == 2);
  while (!h.live.empty()) h.Finish(h.live.begin()->first);
  CHECK(h.finished[job].state == JobState::kSucceeded);
}

TEST_CASE("a task asking for more gpus than any executor has fails with the reason") {
  CoreHarness h;
  ExecWith(h, "two", 4, 0, 2);
  h.Drain();
  auto r = h.core.SubmitJob(Asking(1, 0, 3));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("3 gpu(s)") != std::string::npos);
  CHECK(h.core.SubmitJob(Asking(1, 0, 2)).ok());
}

TEST_CASE("a failed or cancelled attempt gives its memory and gpus back") {
  CoreHarness h;
  ExecutorId e = ExecWith(h, "e", 4, 1000, 2);
  h.Drain();
  JobId first = h.Submit(Asking(1, 1000, 2));
  REQUIRE(h.LiveOn(e).size() == 1);
  JobId second = h.Submit(Asking(1, 1000, 2));
  CHECK(h.LiveOn(e).size() == 1);  // waits for the memory and the gpus
  AttemptId a = h.LiveOn(e)[0];
  h.live.erase(a);
  h.core.AttemptFailed(a, "boom", 1);
  h.Drain();
  REQUIRE(h.LiveOn(e).size() == 1);  // the retry or the second job: one at a time
  JobId cancelled = h.live.begin()->second.job;
  INFO("cancelled job " << cancelled << " of " << first << ", " << second);
  REQUIRE(h.core.CancelJob(cancelled).ok());
  h.Drain();
  h.Pass(1);
  INFO("cancels " << h.cancels.size() << " live " << h.live.size());
  REQUIRE(h.LiveOn(e).size() == 1);  // the other one got the freed resources
  JobId other = h.live.begin()->second.job;
  CHECK((other == first || other == second));
}

namespace {

JobDef Owned(const std::string& owner, uint32_t n, uint64_t memory_mb) {
  JobDef j = Asking(n, memory_mb);
  j.owner = owner;
  return j;
}

}  // namespace

TEST_CASE("a copy is preempted for a first attempt only when the freed memory lets that attempt fit") {
  CoreOptions o;
  o.placement = "first_free";
  o.redundancy_budget = 1.0;
  o.lost_after_s = 0;  // no heartbeats here
  PolicyChain chain;
  chain.push_back(std::make_unique<testing::CopyEverything>(1));
  CoreHarness h(o, std::move(chain));
  ExecutorId e1 = ExecWith(h, "e1", 2, 1000), e2 = ExecWith(h, "e2", 2, 1000);
  h.Drain();
  JobId a = h.Submit(Owned("a", 1, 100));  // on e1
  h.Pass(1);                               // its copy on e2
  REQUIRE(h.core.JobStatus(a)->copies == 1);
  JobId c = h.Submit(Owned("c", 2, 800));  // one on each: every slot is taken
  REQUIRE(h.LiveOn(e1).size() == 2);
  REQUIRE(h.LiveOn(e2).size() == 2);
  // b's 300 MB would not fit on e2 even without the 100 MB copy (800 + 300 > 1000):
  // the copy stays.
  JobId b = h.Submit(Owned("b", 1, 300));
  h.Pass(1);
  CHECK(h.core.JobStatus(a)->copies_preempted == 0);
  CHECK(h.LiveOn(e2).size() == 2);
  // c's task on e1 ends: b fits there.
  for (AttemptId x : h.LiveOn(e1))
    if (h.live.at(x).job == c) {
      h.Finish(x);
      break;
    }
  h.Pass(1);
  bool b_runs = false;
  for (AttemptId x : h.LiveOn(e1)) b_runs |= h.live.at(x).job == b;
  CHECK(b_runs);
}
