// An edge under its parent (scheduler/server/edge/, docs/EDGE.md).
#include "server_fixture.h"

using namespace tailcut;
using namespace tailcut::server_test;

// ------------------------------------------------------ the edge tier --
// docs/EDGE.md, "Two tiers": an edge server (scheduler.parent set) under a
// parent server, a scripted executor under the edge.

namespace {

struct EdgeUnderParent {
  explicit EdgeUnderParent(double edge_quorum, uint32_t slots)
      : parent(TestOptions(30)), edge(EdgeOptions(parent, edge_quorum)), ex(ctx, edge.server->executor_endpoint()) {
    ex.Register(slots);
    wire::SchedulerToExecutor msg;
    REQUIRE(ex.Next(&msg));
    REQUIRE(msg.has_registered());
    client = std::make_unique<Client>(parent.ClientOpts());
  }
  static ServerOptions EdgeOptions(const RunningServer& parent, double edge_quorum) {
    ServerOptions o = TestOptions(30);
    o.parent.endpoint = parent.server->executor_endpoint();
    o.parent.name = "edge-1";
    o.parent.heartbeat_ms = 50;
    o.parent.edge_quorum = edge_quorum;
    return o;
  }
  // The edge as the parent lists it, once it offers `slots` slots.
  bool WaitForEdge(uint32_t slots, wire::ExecutorInfo* out) {
    for (int i = 0; i < 200; ++i) {
      auto list = client->Executors();
      if (list.ok() && list->size() == 1 && list->at(0).cpu_slots() == slots) {
        *out = list->at(0);
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  RunningServer parent;
  RunningServer edge;
  zmq::context_t ctx;
  ScriptedExecutor ex;
  std::unique_ptr<Client> client;
};

}  // namespace

TEST_CASE("server: an edge is one executor of its parent with its fleet's slots, and relays the parent's work") {
  EdgeUnderParent c(0, 3);
  wire::ExecutorInfo info;
  REQUIRE(c.WaitForEdge(3, &info));
  CHECK(info.name() == "edge-1");
  CHECK(info.labels().at("tier") == "edge");
  // Another executor joins the edge: it registers again with 5 slots.
  ScriptedExecutor second(c.ctx, c.edge.server->executor_endpoint());
  second.Register(2);
  REQUIRE(c.WaitForEdge(5, &info));

  wire::JobSpec job = FanoutJob("noop", "", 2);
  job.set_return_outputs(true);
  auto id = c.client->Submit(job);
  REQUIRE(id.ok());
  // The edge places the parent's tasks on its own executors; the scripted
  // one or the second gets them.
  std::set<std::string> outputs;
  int done = 0;
  for (int turn = 0; turn < 200 && done < 2; ++turn) {
    for (ScriptedExecutor* x : {&c.ex, &second}) {
      wire::SchedulerToExecutor msg;
      if (!x->Next(&msg, 0.05) || !msg.has_work()) continue;
      std::vector<uint64_t> ids;
      for (auto& a : msg.work().assign()) ids.push_back(a.attempt_id());
      for (uint64_t a : ids) outputs.insert("done " + std::to_string(a));
      x->Complete(ids);
      done += static_cast<int>(ids.size());
    }
  }
  REQUIRE(done == 2);
  auto st = c.client->Wait(*id);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  auto outs = c.client->Results(*id);
  REQUIRE(outs.ok());
  REQUIRE(outs->size() == 2);
  for (auto& r : *outs) CHECK(outputs.count(r.output()) == 1);  // the executor's own output, relayed
}

TEST_CASE("server: an edge runs the parent's share of a divisible job as is") {
  EdgeUnderParent c(0, 3);
  wire::ExecutorInfo info;
  REQUIRE(c.WaitForEdge(3, &info));
  wire::JobSpec job = FanoutJob("noop", "", 3);
  job.set_divisible_units(30);
  auto id = c.client->Submit(job);
  REQUIRE(id.ok());
  uint64_t units = 0;
  int done = 0;
  for (int turn = 0; turn < 100 && done < 3; ++turn) {
    wire::SchedulerToExecutor msg;
    if (!c.ex.Next(&msg, 0.05) || !msg.has_work()) continue;
    std::vector<uint64_t> ids;
    for (auto& a : msg.work().assign()) {
      CHECK(a.share().total() == 30);  // the parent's numbers, through the edge
      units += a.share().count();
      ids.push_back(a.attempt_id());
    }
    c.ex.Complete(ids);
    done += static_cast<int>(ids.size());
  }
  REQUIRE(done == 3);
  CHECK(units == 30);
  auto st = c.client->Wait(*id);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
}

TEST_CASE("server: an edge quorum closes the edge's part and hands the rest back, which the parent runs again") {
  EdgeUnderParent c(0.5, 4);
  wire::ExecutorInfo info;
  REQUIRE(c.WaitForEdge(4, &info));
  auto id = c.client->Submit(FanoutJob("sleep", "ms=1", 4));
  REQUIRE(id.ok());
  std::vector<uint64_t> first, cancelled, again;
  for (int turn = 0; turn < 100 && first.size() < 4; ++turn) {
    wire::SchedulerToExecutor msg;
    if (c.ex.Next(&msg, 0.1) && msg.has_work())
      for (auto& a : msg.work().assign()) first.push_back(a.attempt_id());
  }
  REQUIRE(first.size() == 4);
  // Half of them report: the edge closes its part of the job.
  c.ex.Complete({first[0], first[1]});
  for (int turn = 0; turn < 100 && (cancelled.size() < 2 || again.size() < 2); ++turn) {
    wire::SchedulerToExecutor msg;
    if (!c.ex.Next(&msg, 0.1) || !msg.has_work()) continue;
    for (uint64_t x : msg.work().cancel()) cancelled.push_back(x);
    for (auto& a : msg.work().assign()) again.push_back(a.attempt_id());
  }
  std::sort(cancelled.begin(), cancelled.end());
  CHECK(cancelled == std::vector<uint64_t>{first[2], first[3]});  // the stragglers, stopped here
  REQUIRE(again.size() == 2);  // handed back; the parent placed them again (here: the only edge)
  c.ex.Complete(again);
  auto st = c.client->Wait(*id);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  CHECK(st->attempts() == 6);
  CHECK(st->failed_attempts() == 0);  // a hand-back is not a failure
}

TEST_CASE("server: an edge that restarts cancels the parent's tasks it journaled instead of resuming them") {
  char tmpl[] = "/tmp/tailcut-edge-journal-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  RunningServer parent(TestOptions(30));
  ServerOptions eo = EdgeUnderParent::EdgeOptions(parent, 0);
  eo.state_dir = dir;
  zmq::context_t ctx;
  {
    RunningServer edge(eo);
    ScriptedExecutor ex(ctx, edge.server->executor_endpoint());
    ex.Register(2);
    wire::SchedulerToExecutor msg;
    REQUIRE(ex.Next(&msg));
    REQUIRE(msg.has_registered());
    Client pc(parent.ClientOpts());
    bool seen = false;
    for (int i = 0; i < 200 && !seen; ++i) {
      auto list = pc.Executors();
      seen = list.ok() && list->size() == 1;
      if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    REQUIRE(seen);
    REQUIRE(pc.Submit(FanoutJob("sleep", "ms=1", 1)).ok());
    bool assigned = false;
    for (int i = 0; i < 50 && !assigned; ++i)
      assigned = ex.Next(&msg, 0.1) && msg.has_work() && msg.work().assign_size() == 1;
    REQUIRE(assigned);         // held by the edge, never finished
  }                            // the edge stops; its journal keeps the parent's task as a running job
  { RunningServer edge(eo); }  // restarted: that job is cancelled, not resumed

  auto journal = Journal::Open(JournalOptions{dir + "/journal.db"});
  REQUIRE(journal.ok());
  std::vector<JournaledJob> jobs;
  REQUIRE((*journal)->Load(&jobs).ok());
  REQUIRE(jobs.size() == 1);
  wire::JobSpec spec;
  REQUIRE(spec.ParseFromString(jobs[0].spec));
  CHECK(spec.owner() == "parent:edge-1");
  CHECK(jobs[0].finished);
  CHECK(jobs[0].state == JobState::kCancelled);
  CHECK(jobs[0].reason.find("edge restarted") != std::string::npos);
  journal->reset();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}
