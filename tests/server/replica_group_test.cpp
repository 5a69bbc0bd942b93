// Replicas on Raft (scheduler/server/replicas/, docs/RELIABILITY.md,
// "Replicas"): three in-process replicas on loopback elect one leader,
// commit group commits only through a quorum, apply them to their own
// journals, and go on under a new leader when the old one is gone.
#include "replica_fixture.h"

namespace tailcut::replica_test {
namespace {

TEST_CASE("three replicas elect a leader and commit through it and a follower takes over with every commit") {
  Cluster c(3);
  c.StartAll();
  int leader = c.WaitLeader();
  REQUIRE(leader >= 0);

  // Followers refuse proposals: only the leader commits.
  for (size_t i = 0; i < c.size(); ++i) {
    if (static_cast<int>(i) == leader) continue;
    Status s = c[i].group->Propose(AcceptEntry(999), 999);
    CHECK(s.code() == Status::Code::kUnavailable);
  }
  REQUIRE(c.Commit(static_cast<size_t>(leader), 1, 20) == 20);
  // Every replica applies every committed entry to its own journal.
  for (size_t i = 0; i < c.size(); ++i) {
    INFO("replica " << i + 1);
    CHECK(WaitFor([&] { return c[i].machine->applied() == 20; }));
  }

  // The leader dies; one of the two others leads, in a later term, with
  // every entry the old leader had reported committed.
  uint64_t old_term = c[static_cast<size_t>(leader)].group->term();
  c.Stop(static_cast<size_t>(leader));
  int next = c.WaitLeader();
  REQUIRE(next >= 0);
  CHECK(next != leader);
  CHECK(c[static_cast<size_t>(next)].group->term() > old_term);
  auto n = static_cast<size_t>(next);
  REQUIRE(c.Commit(n, 21, 10) == 10);
  // A quorum (the new leader and one follower) had them; the other
  // follower learns that they committed with the next heartbeat.
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i].group) CHECK(WaitFor([&] { return c[i].machine->applied() == 30; }));
  }
  // A barrier (what a new leader waits for before it reads its journal)
  // commits once every entry before it is applied here; followers refuse one.
  REQUIRE(c[n].group->Barrier(777).ok());
  CHECK(WaitFor([&] {
    c[n].Drain();
    return c[n].committed.count(777) == 1;
  }));
  CHECK(c[n].machine->applied() == 30);
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i].group && i != n) CHECK(c[i].group->Barrier(778).code() == Status::Code::kUnavailable);

  for (size_t i = 0; i < c.size(); ++i) c.Stop(i);
  CHECK(c.JobsIn(static_cast<size_t>(leader)) == Range(1, 20));
  for (size_t i = 0; i < c.size(); ++i) {
    if (static_cast<int>(i) == leader) continue;
    INFO("replica " << i + 1);
    CHECK(c.JobsIn(i) == Range(1, 30));
  }
}

TEST_CASE("a leader cut from its quorum commits nothing more and steps down") {
  Cluster c(3);
  for (size_t i = 0; i < c.size(); ++i) c[i].options.max_in_flight = 4;
  c.StartAll();
  int leader = c.WaitLeader();
  REQUIRE(leader >= 0);
  auto l = static_cast<size_t>(leader);
  REQUIRE(c.Commit(l, 1, 4) == 4);  // max_in_flight at once

  for (size_t i = 0; i < c.size(); ++i)
    if (i != l) c.Stop(i);
  // Proposals made now never commit; beyond max_in_flight they are refused.
  size_t accepted = 0, refused = 0;
  for (JobId id = 100; id < 110; ++id) {
    Status s = c[l].group->Propose(AcceptEntry(id), id);
    if (s.ok()) {
      accepted++;
    } else {
      refused++;
      CHECK((s.code() == Status::Code::kResourceExhausted || s.code() == Status::Code::kUnavailable));
    }
  }
  CHECK(accepted <= 4);
  CHECK(refused >= 6);
  // It stops leading within a few election timeouts (libraft's check-quorum).
  CHECK(WaitFor([&] { return !c[l].group->is_leader(); }, 5));
  CHECK(c[l].group->Propose(AcceptEntry(200), 200).code() == Status::Code::kUnavailable);
  WaitFor([&] {
    c[l].Drain();
    return c[l].failed.size() == accepted;
  });
  CHECK(c[l].failed.size() == accepted);
  for (JobId id = 100; id < 110; ++id) CHECK(c[l].committed.count(id) == 0);
  CHECK(c[l].machine->applied() == 4);
  c.Stop(l);
  CHECK(c.JobsIn(l) == Range(1, 4));
}

TEST_CASE("a replica whose disk was wiped rejoins from the leader's snapshot and log") {
  Cluster c(3);
  for (size_t i = 0; i < c.size(); ++i) {
    c[i].options.snapshot_threshold = 8;
    c[i].options.snapshot_trailing = 2;
  }
  c.StartAll();
  int leader = c.WaitLeader();
  REQUIRE(leader >= 0);
  size_t wiped = (static_cast<size_t>(leader) + 1) % 3;
  REQUIRE(c.Commit(static_cast<size_t>(leader), 1, 30) == 30);
  c.Stop(wiped);
  std::filesystem::remove_all(std::filesystem::path(c.JournalPath(wiped)).parent_path());
  // More commits while it is away: the log it missed is compacted into a snapshot.
  REQUIRE(c.Commit(static_cast<size_t>(leader), 31, 20) == 20);
  c.Start(wiped);
  REQUIRE(c.Commit(static_cast<size_t>(leader), 51, 1) == 1);
  // Restored from the snapshot, then the entries after it, up to the leader's.
  auto& l = *c[static_cast<size_t>(leader)].group;
  CHECK(WaitFor([&] { return c[wiped].group->applied_index() >= l.applied_index(); }));
  c.Stop(wiped);
  CHECK(c.JobsIn(wiped) == Range(1, 51));
}

}  // namespace
}  // namespace tailcut::replica_test
