// Owners' shares (owner_shares.h): weighted fair share across owners, work
// conservation, quotas, priorities within an owner, determinism, and the
// copy rule (first attempts before any other job's copies).
#include <catch2/catch.hpp>

#include <map>

#include "core_harness.h"
#include "owner_shares.h"

using namespace tailcut;
using tailcut::testing::CoreHarness;

namespace {

JobDef OwnedFanout(const std::string& owner, uint32_t n, int32_t priority = 0) {
  JobDef j = CoreHarness::Fanout(n);
  j.owner = owner;
  j.priority = priority;
  return j;
}

CoreOptions Owners(std::vector<std::pair<std::string, OwnerShareOptions>> owners) {
  CoreOptions o;
  o.placement = "first_free";
  o.owners.owners = std::move(owners);
  return o;
}

// Live attempts per job.
std::map<JobId, int> LivePerJob(const CoreHarness& h) {
  std::map<JobId, int> n;
  for (auto& [id, l] : h.live) n[l.job]++;
  return n;
}

// Finishes the oldest live attempt, `n` times.
void FinishOldest(CoreHarness& h, int n) {
  for (int i = 0; i < n && !h.live.empty(); ++i) h.Finish(h.live.begin()->first);
}

}  // namespace

TEST_CASE("busy owners share the slots in proportion to their weights") {
  CoreHarness h(Owners({{"a", {1.0, 0}}, {"b", {3.0, 0}}}));
  h.Exec(8);
  JobId a = *h.core.SubmitJob(OwnedFanout("a", 1000));
  JobId b = *h.core.SubmitJob(OwnedFanout("b", 1000));
  h.Drain();
  auto n = LivePerJob(h);
  CHECK(n[a] == 2);
  CHECK(n[b] == 6);
  // Freed slots keep the proportion: whoever is under its share gets them.
  for (int round = 0; round < 50; ++round) {
    FinishOldest(h, 1);
    n = LivePerJob(h);
    CHECK(n[a] + n[b] == 8);
    CHECK(n[a] >= 1);
    CHECK(n[a] <= 3);
  }
}

TEST_CASE("an idle owner's share goes to the busy one, and comes back when it has work") {
  CoreHarness h(Owners({{"a", {1.0, 0}}, {"b", {1.0, 0}}}));
  h.Exec(8);
  JobId a = h.Submit(OwnedFanout("a", 1000));
  CHECK(LivePerJob(h)[a] == 8);  // work conserving: b has nothing queued
  JobId b = h.Submit(OwnedFanout("b", 1000));
  CHECK(LivePerJob(h)[b] == 0);  // no slot taken from a running first attempt
  FinishOldest(h, 4);            // each freed slot goes to b, under its share
  auto n = LivePerJob(h);
  CHECK(n[a] == 4);
  CHECK(n[b] == 4);
  FinishOldest(h, 8);
  n = LivePerJob(h);
  CHECK(n[a] == 4);
  CHECK(n[b] == 4);
}

TEST_CASE("a quota caps an owner's slots even when the rest of the fleet is idle") {
  CoreHarness h(Owners({{"a", {1.0, 3}}}));
  h.Exec(8);
  JobId a = h.Submit(OwnedFanout("a", 20));
  CHECK(LivePerJob(h)[a] == 3);
  JobId c = h.Submit(OwnedFanout("c", 20));  // not listed: the defaults, no quota
  CHECK(LivePerJob(h)[c] == 5);
  FinishOldest(h, 10);
  auto n = LivePerJob(h);
  CHECK(n[a] <= 3);
  CHECK(n[a] + n[c] == 8);
}

TEST_CASE("priority orders an owner's own jobs, not other owners'") {
  CoreHarness h(Owners({}));
  h.Exec(2);
  JobId low = h.Submit(OwnedFanout("a", 10, 0));  // takes both slots
  JobId high = h.Submit(OwnedFanout("a", 4, 5));
  JobId other = h.Submit(OwnedFanout("b", 4, -5));
  // b is under its share: it gets the next slot whatever its priority;
  // then a's high-priority job before a's earlier low one.
  FinishOldest(h, 1);
  CHECK(h.launches.back().job == other);
  FinishOldest(h, 1);
  CHECK(h.launches.back().job == high);
  FinishOldest(h, 1);
  CHECK(h.launches.back().job == other);
  std::vector<JobId> order;
  for (int i = 0; i < 8; ++i) {
    FinishOldest(h, 1);
    order.push_back(h.launches.back().job);
  }
  // a's low job runs only once the high one has nothing left to place.
  size_t first_low = std::find(order.begin(), order.end(), low) - order.begin();
  REQUIRE(first_low < order.size());
  for (size_t i = first_low; i < order.size(); ++i) CHECK(order[i] != high);
  CHECK(h.core.JobStatus(high)->priority == 5);
}

TEST_CASE("a priority outside the bounds is refused") {
  CoreHarness h;
  h.Exec(1);
  auto r = h.core.SubmitJob(OwnedFanout("a", 1, kMaxJobPriority + 1));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("priority") != std::string::npos);
  CHECK(h.core.SubmitJob(OwnedFanout("a", 1, -kMaxJobPriority)).ok());
}

TEST_CASE("shares are deterministic: the same events give the same launches") {
  auto run = [] {
    CoreHarness h(Owners({{"a", {1.0, 0}}, {"b", {2.5, 5}}}));
    h.Exec(3);
    h.Exec(4);
    for (int i = 0; i < 6; ++i)
      (void)h.core.SubmitJob(OwnedFanout(i % 3 == 0 ? "a" : i % 3 == 1 ? "b" : "c", 7, i % 2));
    h.Drain();
    for (int i = 0; i < 40; ++i) FinishOldest(h, 1);
    std::vector<std::pair<JobId, TaskIndex>> seq;
    for (auto& l : h.launches) seq.emplace_back(l.job, l.task);
    return seq;
  };
  auto one = run();
  CHECK(one.size() > 40);
  CHECK(one == run());
}

TEST_CASE("owners come and go with their jobs") {
  CoreOptions o;
  CoreHarness h(o);
  h.Exec(2);
  for (int i = 0; i < 500; ++i) {
    JobId j = h.Submit(OwnedFanout("owner" + std::to_string(i), 1));
    FinishOldest(h, 1);
    REQUIRE(h.core.JobStatus(j)->state == JobState::kSucceeded);
  }
  CHECK(h.core.OwnerShares().size() <= 65);  // idle owners are forgotten past a few
  JobId j = h.Submit(OwnedFanout("owner0", 2));
  CHECK(LivePerJob(h)[j] == 2);
  auto shares = h.core.OwnerShares();
  auto it = std::find_if(shares.begin(), shares.end(), [](const OwnerShareInfo& o) { return o.owner == "owner0"; });
  REQUIRE(it != shares.end());
  CHECK(it->slots == 2);
  CHECK(it->jobs == 1);
}

TEST_CASE("the owner book picks the lowest share and bounds the pick") {
  OwnerOptions opts;
  opts.owners = {{"a", {2.0, 0}}};
  core::OwnerBook book(opts);
  core::OwnerState& a = book.Of("a");
  core::OwnerState& b = book.Of("b");
  CHECK(a.weight == 2.0);
  CHECK(b.weight == 1.0);
  book.Push(a, 0, 1);
  book.Push(b, 0, 2);
  a.slots = 2;  // share 1
  b.slots = 3;  // share 3
  uint64_t limit = 0;
  CHECK(book.Pick(&limit) == &a);
  CHECK(limit == 7);  // a may hold 6 (share 3) and then one more
  CHECK(book.Pop(a) == 1);
  CHECK(book.Pick(&limit) == &b);  // a has no entry left
  CHECK(limit == UINT64_MAX);
  CHECK(book.Waiting() == 1);
}

TEST_CASE("owner config: defaults, entries, and bad values refused") {
  auto load = [](const std::string& toml, OwnerOptions* o) {
    auto cfg = Config::Parse(toml);
    REQUIRE(cfg.ok());
    Status s = LoadOwnerOptions(*cfg, "owners", o);
    if (s.ok()) s = cfg->CheckAllUsed();
    return s;
  };
  OwnerOptions o;
  REQUIRE(load("[owners]\ndefault_weight = 2\n[[owners.owner]]\nname = \"user:ann\"\nweight = 4\nmax_slots = 10\n", &o)
              .ok());
  CHECK(o.defaults.weight == 2);
  CHECK(o.For("user:ann").weight == 4);
  CHECK(o.For("user:ann").max_slots == 10);
  CHECK(o.For("someone").weight == 2);
  auto bad_msg = [&](const std::string& toml) {
    OwnerOptions fresh;  // a failed load leaves what it read so far
    return load(toml, &fresh).message();
  };
  CHECK(bad_msg("[owners]\ndefault_weight = -1\n").find("weight") != std::string::npos);
  CHECK(bad_msg("[owners]\ndefault_weight = 0\n").find("weight") != std::string::npos);
  CHECK(bad_msg("[owners]\ndefault_weight = 1e9\n").find("weight") != std::string::npos);
  CHECK_FALSE(bad_msg("[owners]\ndefault_weight = nan\n").empty());
  CHECK(bad_msg("[[owners.owner]]\nweight = 2\n").find("name") != std::string::npos);  // no name
  CHECK(bad_msg("[[owners.owner]]\nname = \"x\"\n[[owners.owner]]\nname = \"x\"\n").find("twice") != std::string::npos);
  CHECK(bad_msg("[owners]\ndefault_wieght = 2\n").find("default_wieght") != std::string::npos);
  CHECK(bad_msg("[[owners.owner]]\nname = \"x\"\nweigth = 2\n").find("weigth") != std::string::npos);
}

// Four one-slot executors (a copy never runs where its task does) and a
// policy that proposes a copy of every running attempt of job 1.
std::unique_ptr<CoreHarness> CopyHarness() {
  CoreOptions o = Owners({});
  o.redundancy_budget = 1.0;
  PolicyChain chain;
  chain.push_back(std::make_unique<tailcut::testing::CopyEverything>(1));
  auto h = std::make_unique<CoreHarness>(o, std::move(chain));
  for (int i = 0; i < 4; ++i) h->Exec(1);
  return h;
}

TEST_CASE("a copy is not launched onto a slot another job's first attempt waits for") {
  auto hp = CopyHarness();
  CoreHarness& h = *hp;
  JobId a = h.Submit(OwnedFanout("a", 2));  // 2 slots; 2 idle
  JobId b = h.Submit(OwnedFanout("b", 8));  // takes the 2 idle ones, 6 wait
  // One of b's attempts ends and the policies run before the pump: the
  // freed slot is free when the copy is proposed, but b's next task waits.
  AttemptId done = 0;
  for (auto& [id, l] : h.live)
    if (l.job == b) done = id;
  h.live.erase(done);
  h.core.AttemptSucceeded(done, "", 1.0);
  h.Pass(1);  // Tick: the policy proposes copies of a's tasks; then the pump
  CHECK(h.core.JobStatus(a)->copies == 0);
  CHECK(h.core.JobStatus(a)->copies_preempted == 0);  // never launched, so never cancelled
  CHECK(LivePerJob(h)[b] == 2);
}

TEST_CASE("a first attempt waiting for a slot cancels another job's copy, and the original keeps running") {
  auto hp = CopyHarness();
  CoreHarness& h = *hp;
  JobId a = h.Submit(OwnedFanout("a", 2));
  h.Pass(1);  // idle capacity: the copies are welcome
  REQUIRE(h.core.JobStatus(a)->copies == 2);
  REQUIRE(LivePerJob(h)[a] == 4);
  const size_t cancels = h.cancels.size();
  JobId b = h.Submit(OwnedFanout("b", 3));  // another owner's first attempts want those slots
  auto n = LivePerJob(h);
  CHECK(n[b] == 2);
  CHECK(n[a] == 2);
  REQUIRE(h.cancels.size() == cancels + 2);
  for (size_t i = cancels; i < h.cancels.size(); ++i) {
    // Only copies were cancelled: every one of a's tasks still runs.
    bool was_copy = false;
    for (auto& l : h.launches)
      if (l.attempt == h.cancels[i].attempt) was_copy = l.copy;
    CHECK(was_copy);
  }
  CHECK(h.core.JobStatus(a)->copies_preempted == 2);
  CHECK(h.core.Counters().copies_preempted == 2);
  CHECK(h.core.JobStatus(a)->running == 2);
  // a's originals finish; b's last task takes a freed slot.
  FinishOldest(h, 1);
  CHECK(h.core.JobStatus(a)->state == JobState::kRunning);
  CHECK(LivePerJob(h)[b] == 3);
}
