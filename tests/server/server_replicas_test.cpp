// Three SchedulerServers as replicas in one process, on loopback
// (scheduler/server/src/server_replicas.cpp; docs/RELIABILITY.md,
// "Replicas"): only the leader accepts and dispatches, followers answer
// clients and executors with NOT_LEADER naming the leader's endpoint, every
// replica's journal gets each group commit, a follower takes over with
// every job when the leader goes, and a leader without its quorum stops.
#include <fstream>

#include "../integration/metrics_scrape.h"
#include "server_fixture.h"
#include "tailcut/client/local_cluster.h"

using namespace tailcut;
using namespace tailcut::server_test;

namespace {

bool WaitUntil(const std::function<bool()>& done, double s = 10) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

struct Replica {
  explicit Replica(const ServerOptions& o) : server(o) {
    REQUIRE(server.Bind().ok());
    thread = std::thread([this] {
      server.Run();
      returned = true;
    });
  }
  ~Replica() {
    server.Stop();
    thread.join();
  }
  SchedulerServer server;
  std::thread thread;
  std::atomic<bool> returned{false};
};

class Group {
 public:
  explicit Group(size_t n, const std::function<void(ServerOptions&)>& tweak = {}) {
    dir_ = std::filesystem::temp_directory_path() /
           ("tc_replicas_" + std::to_string(getpid()) + "_" + std::to_string(counter_++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const std::string key = (dir_ / "replica.key").string();
    std::ofstream(key) << "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";
    for (size_t i = 0; i < n; ++i) {
      auto port = [] {  // below the ephemeral range: no client's outgoing port takes it meanwhile
        int p = FreeLoopbackPort();
        REQUIRE(p > 0);
        return std::to_string(p);
      };
      peers_.push_back({i + 1, "127.0.0.1:" + port(), "tcp://127.0.0.1:" + port(), "tcp://127.0.0.1:" + port()});
    }
    for (size_t i = 0; i < n; ++i) {
      ServerOptions o = TestOptions(2.0);
      o.state_dir = (dir_ / ("r" + std::to_string(i + 1))).string();
      o.replicas.id = i + 1;
      o.replicas.peers = peers_;
      o.replicas.key_file = key;
      o.http_listen = "127.0.0.1:0";  // /metrics says who leads
      if (tweak) tweak(o);
      options_.push_back(o);
    }
    replicas_.resize(n);
  }
  ~Group() {
    replicas_.clear();
    std::filesystem::remove_all(dir_);
  }
  void Start(size_t i) { replicas_[i] = std::make_unique<Replica>(options_[i]); }
  void StartAll() {
    for (size_t i = 0; i < replicas_.size(); ++i) Start(i);
  }
  void Stop(size_t i) { replicas_[i].reset(); }
  // Replica i loses its disk (it must be stopped).
  void Wipe(size_t i) { std::filesystem::remove_all(options_[i].state_dir); }
  std::string RaftDir(size_t i) const { return options_[i].state_dir + "/raft"; }
  Replica* operator[](size_t i) { return replicas_[i].get(); }
  const ReplicaPeerOptions& peer(size_t i) const { return peers_[i]; }
  size_t size() const { return replicas_.size(); }

  // A client request to replica i: a job that does not exist. The leader
  // says UNKNOWN_JOB (NotFound), a follower NOT_LEADER (Unavailable).
  Status Ask(size_t i) {
    ClientOptions c;
    c.endpoint = peers_[i].client_endpoint;
    c.timeout_s = 2;
    Client client(c);
    return client.GetStatus(987654).status();
  }
  // The one running replica that serves clients, once exactly one does (-1: none in time).
  int Leader(double s = 15) {
    int leader = -1;
    WaitUntil(
        [&] {
          int n = 0;
          for (size_t i = 0; i < replicas_.size(); ++i) {
            if (replicas_[i] && !replicas_[i]->returned && Ask(i).code() == Status::Code::kNotFound) {
              leader = static_cast<int>(i);
              n++;
            }
          }
          return n == 1;
        },
        s);
    return leader;
  }
  ClientOptions ClientOf(size_t i) const {
    ClientOptions c;
    c.endpoint = peers_[i].client_endpoint;
    c.timeout_s = 5;
    return c;
  }
  // Replica i's journal (it must be stopped).
  std::vector<JournaledJob> JournalOf(size_t i) const {
    auto j = tailcut::Journal::Open(JournalOptions{options_[i].state_dir + "/journal.db", false});
    REQUIRE(j.ok());
    std::vector<JournaledJob> jobs;
    REQUIRE((*j)->Load(&jobs).ok());
    return jobs;
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path dir_;
  std::vector<ReplicaPeerOptions> peers_;
  std::vector<ServerOptions> options_;
  std::vector<std::unique_ptr<Replica>> replicas_;
};

// The next Work for `ex` with an assignment, heartbeating meanwhile.
bool NextWork(ScriptedExecutor& ex, wire::SchedulerToExecutor* msg, double s = 10) {
  return WaitUntil(
      [&] {
        ex.Heartbeat();
        return ex.Next(msg, 0.1) && msg->has_work() && msg->work().assign_size() > 0;
      },
      s);
}

}  // namespace

TEST_CASE("replicas: only the leader serves, followers name it, and a follower takes over with every job") {
  Group g(3);
  g.StartAll();
  const int l = g.Leader();
  REQUIRE(l >= 0);
  const auto leader = static_cast<size_t>(l);
  zmq::context_t ctx;

  // Followers answer clients and executors with where the leader is.
  for (size_t f = 0; f < g.size(); ++f) {
    if (f == leader) continue;
    INFO("follower " << f + 1);
    Status s = g.Ask(f);
    CHECK(s.code() == Status::Code::kUnavailable);
    CHECK(s.message().find("NOT_LEADER") != std::string::npos);
    CHECK(s.message().find(g.peer(leader).client_endpoint) != std::string::npos);
    ScriptedExecutor ex(ctx, g.peer(f).executor_endpoint);
    ex.Register(2);
    wire::SchedulerToExecutor msg;
    REQUIRE(ex.Next(&msg));
    REQUIRE(msg.has_error());
    CHECK(msg.error().code() == wire::Error::NOT_LEADER);
    CHECK(msg.error().message().find(g.peer(leader).executor_endpoint) != std::string::npos);
  }

  // /metrics: every replica says which one leads and in which term; the
  // leader, how far behind each follower is.
  REQUIRE(WaitUntil([&] {
    auto m = testing::ScrapeMetrics(g[leader]->server.http_endpoint());
    return m["tailcut_replica_follower_lag_entries{replica=\"" + std::to_string(g.peer((leader + 1) % 3).id) + "\"}"] ==
               0 &&
           m.count("tailcut_replica_follower_lag_entries{replica=\"" + std::to_string(g.peer((leader + 2) % 3).id) +
                   "\"}");
  }));
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("replica " << i + 1);
    auto m = testing::ScrapeMetrics(g[i]->server.http_endpoint());
    CHECK(m["tailcut_replica_id"] == static_cast<double>(g.peer(i).id));
    CHECK(m["tailcut_replica_leading"] == (i == leader ? 1 : 0));
    CHECK(m["tailcut_replica_leader_id"] == static_cast<double>(g.peer(leader).id));
    CHECK(m["tailcut_replica_term"] >= 1);
    CHECK(m["tailcut_replica_applied_index"] >= 1);
    CHECK(m.count("tailcut_replica_follower_lag_entries{replica=\"" + std::to_string(g.peer(i).id) + "\"}") == 0);
  }

  // The dashboard's /api/replica says the same.
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("replica " << i + 1);
    const std::string json = testing::HttpGet(g[i]->server.http_endpoint(), "/api/replica");
    CHECK(json.find("\"id\":" + std::to_string(g.peer(i).id) + ",") != std::string::npos);
    CHECK(json.find(i == leader ? "\"leading\":true" : "\"leading\":false") != std::string::npos);
    CHECK(json.find("\"leader_id\":" + std::to_string(g.peer(leader).id) + ",") != std::string::npos);
    CHECK((json.find("\"followers\":[]") != std::string::npos) == (i != leader));
  }

  // A client that lists every replica, the leader last, is led to it.
  {
    ClientOptions all = g.ClientOf(leader);
    all.endpoint.clear();
    for (size_t i = 0; i < g.size(); ++i)
      if (i != leader) all.endpoint += g.peer(i).client_endpoint + ",";
    all.endpoint += g.peer(leader).client_endpoint;
    Client listed(all);
    CHECK(listed.GetStatus(987654).status().code() == Status::Code::kNotFound);
  }

  // The leader runs a job; a second one has one of its two tasks committed.
  Client client(g.ClientOf(leader));
  JobId first = 0, second = 0;
  wire::Assignment held;  // the second job's attempt left running on the first leader
  uint64_t first_term = 0;  // the first leader's, which its Work carries (docs/PROTOCOL.md, "Terms")
  wire::JobSpec second_spec = FanoutJob("noop", "", 2);
  second_spec.set_request_key("replicated-second");
  second_spec.set_return_outputs(true);  // the results say who committed
  {
    ScriptedExecutor ex(ctx, g.peer(leader).executor_endpoint);
    wire::SchedulerToExecutor msg;
    first = RegisterAndSubmit(ex, 4, client, FanoutJob("noop", "", 3), &msg);
    first_term = msg.work().term();
    CHECK(first_term >= 1);
    CHECK(first_term == testing::ScrapeMetrics(g[leader]->server.http_endpoint())["tailcut_replica_term"]);
    std::vector<uint64_t> attempts;
    for (const auto& a : msg.work().assign()) attempts.push_back(a.attempt_id());
    REQUIRE(attempts.size() == 3);
    ex.Complete(attempts);
    auto done = client.Wait(first);
    REQUIRE(done.ok());
    CHECK(done->state() == wire::JOB_SUCCEEDED);

    auto sub = client.Submit(second_spec);
    REQUIRE(sub.ok());
    second = *sub;
    REQUIRE(NextWork(ex, &msg));
    REQUIRE(msg.work().assign_size() == 2);
    ex.Complete({msg.work().assign(0).attempt_id()});
    held = msg.work().assign(1);
    REQUIRE(WaitUntil([&] { return client.GetStatus(second)->committed() == 1; }));
  }

  // The leader goes; a follower leads, with both jobs from its journal.
  g.Stop(leader);
  const int n = g.Leader();
  REQUIRE(n >= 0);
  REQUIRE(n != l);
  const auto next = static_cast<size_t>(n);
  Client again(g.ClientOf(next));
  auto st = again.GetStatus(first);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  CHECK(st->committed() == 3);
  st = again.GetStatus(second);
  REQUIRE(st.ok());
  CHECK(st->committed() == 1);
  // The client's retry with its request key gets the same job.
  auto retry = again.Submit(second_spec);
  REQUIRE(retry.ok());
  CHECK(*retry == second);
  // An executor that never held that attempt, offering the same kernel,
  // claims it and a forged result at the new leader: only the identity the
  // replicated launch names may adopt it, so the claim is cancelled.
  {
    ScriptedExecutor rogue(ctx, g.peer(next).executor_endpoint);
    wire::ExecutorMessage m;
    m.set_version(kProtocolVersion);
    wire::Register* r = m.mutable_register_();
    r->set_name("rogue");
    r->set_cpu_slots(2);
    r->add_kernels("noop");
    wire::HeldAttempt* h = r->add_running();
    h->set_attempt_id(held.attempt_id());
    h->set_job_id(second);
    h->set_task_index(held.task_index());
    h->set_started(true);
    wire::AttemptResult* forged = r->add_undelivered();
    forged->set_attempt_id(held.attempt_id());
    forged->set_job_id(second);
    forged->set_task_index(held.task_index());
    forged->set_outcome(wire::AttemptResult::OK);
    forged->set_output("FORGED");
    rogue.Send(m);
    bool cancelled = false, registered = false;
    wire::SchedulerToExecutor msg;
    while (!registered && rogue.Next(&msg, 10)) {
      if (msg.has_work())
        for (uint64_t a : msg.work().cancel()) cancelled = cancelled || a == held.attempt_id();
      registered = msg.has_registered();
    }
    REQUIRE(registered);
    CHECK(msg.registered().term() > first_term);  // the new leader's
    CHECK(cancelled);
    wire::ExecutorMessage bye;
    bye.set_version(kProtocolVersion);
    bye.mutable_goodbye()->set_reason("rogue leaves");
    rogue.Send(bye);
    CHECK(again.GetStatus(second)->committed() == 1);
  }
  {
    ScriptedExecutor ex(ctx, g.peer(next).executor_endpoint);
    ex.Register(4);
    wire::SchedulerToExecutor msg;
    REQUIRE(NextWork(ex, &msg, 15));
    REQUIRE(msg.work().assign_size() == 1);  // only the task not committed
    CHECK(msg.work().term() > first_term);
    CHECK(msg.work().assign(0).job_id() == second);
    ex.Complete({msg.work().assign(0).attempt_id()});
    auto done = again.Wait(second);
    REQUIRE(done.ok());
    CHECK(done->state() == wire::JOB_SUCCEEDED);
    CHECK(done->committed() == 2);
    auto results = again.Results(second);
    REQUIRE(results.ok());
    for (const auto& res : *results) CHECK(res.output() != "FORGED");
  }

  // Every replica that ran to the end has both jobs, each task committed
  // once. A follower applies an entry when the leader's next message
  // (a heartbeat, every 100 ms) tells it the entry committed: a moment first.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  for (size_t i = 0; i < g.size(); ++i) g.Stop(i);
  for (size_t i = 0; i < g.size(); ++i) {
    if (i == leader) continue;
    INFO("replica " << i + 1);
    auto jobs = g.JournalOf(i);
    REQUIRE(jobs.size() == 2);
    for (const JournaledJob& j : jobs) {
      CHECK(j.finished);
      std::set<TaskIndex> tasks;
      for (const CommittedOutput& c : j.commits) CHECK(tasks.insert(c.task).second);
      CHECK(tasks.size() == (j.id == first ? 3u : 2u));
    }
  }
}

TEST_CASE("replicas: a leader cut from its quorum stops serving and ends its loop, deposed") {
  Group g(3);
  g.StartAll();
  const int l = g.Leader();
  REQUIRE(l >= 0);
  const auto leader = static_cast<size_t>(l);
  for (size_t i = 0; i < g.size(); ++i)
    if (i != leader) g.Stop(i);
  // libraft's leader steps down after an election timeout without a quorum.
  REQUIRE(WaitUntil([&] { return g[leader]->returned.load(); }, 10));
  CHECK(g[leader]->server.deposed());
}

// Issue 42: a single scheduler prunes finished jobs beyond job_retention when
// it starts; a replicated leader names the same jobs in its first entry, so
// every replica's journal (and each snapshot, a copy of it) stays bounded.
TEST_CASE("replicas: a takeover prunes every replica's journal to the retained jobs, a wiped one's too") {
  Group g(3, [](ServerOptions& o) {
    o.core.job_retention = 2;
    o.replicas.snapshot_threshold = 8;  // the wiped replica rejoins from a snapshot
    o.replicas.snapshot_trailing = 2;
  });
  g.StartAll();
  const int l = g.Leader();
  REQUIRE(l >= 0);
  const auto leader = static_cast<size_t>(l);
  zmq::context_t ctx;
  Client client(g.ClientOf(leader));
  std::set<JobId> kept, pruned;
  {
    ScriptedExecutor ex(ctx, g.peer(leader).executor_endpoint);
    wire::SchedulerToExecutor msg;
    auto run = [&](JobId id, wire::SchedulerToExecutor& work) {
      REQUIRE(work.work().assign_size() == 1);
      ex.Complete({work.work().assign(0).attempt_id()});
      auto done = client.Wait(id);
      REQUIRE(done.ok());
      CHECK(done->state() == wire::JOB_SUCCEEDED);
    };
    // A parent, and a child of it that also waits for a job left running:
    // unfinished, the child keeps its parent past job_retention.
    const JobId parent = RegisterAndSubmit(ex, 2, client, FanoutJob("noop", "", 1), &msg);
    run(parent, msg);
    auto blocker = client.Submit(FanoutJob("noop", "", 1));
    REQUIRE(blocker.ok());
    REQUIRE(NextWork(ex, &msg));  // never completed
    wire::JobSpec child_spec = FanoutJob("noop", "", 1);
    child_spec.add_after(parent);
    child_spec.add_after(*blocker);
    auto child = client.Submit(child_spec);
    REQUIRE(child.ok());
    kept = {parent, *blocker, *child};
    // Five more finish: the newest two are kept, the three before them go.
    for (int k = 0; k < 5; ++k) {
      auto id = client.Submit(FanoutJob("noop", "", 1));
      REQUIRE(id.ok());
      REQUIRE(NextWork(ex, &msg));
      run(*id, msg);
      (k < 3 ? pruned : kept).insert(*id);
    }
  }
  // Every replica holds all seven jobs before the takeover.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  g.Stop(leader);
  std::set<JobId> all = kept;
  all.insert(pruned.begin(), pruned.end());
  {
    std::set<JobId> ids;
    for (const JournaledJob& j : g.JournalOf(leader)) ids.insert(j.id);
    CHECK(ids == all);
  }
  const int n = g.Leader();
  REQUIRE(n >= 0);
  const auto next = static_cast<size_t>(n);
  // The old leader's disk is lost. Entries on the new leader (jobs left
  // running on an executor of another kernel: the blocker waits) compact
  // the log past the takeover's entry.
  g.Wipe(leader);
  Client again(g.ClientOf(next));
  ScriptedExecutor sleeper(ctx, g.peer(next).executor_endpoint);
  sleeper.Register(16, {"sleep"});
  for (int k = 0; k < 12; ++k) {
    auto id = again.Submit(FanoutJob("sleep", "", 1));
    REQUIRE(id.ok());
    kept.insert(*id);
  }
  g.Start(leader);
  auto applied = [&](size_t i) {
    return testing::ScrapeMetrics(g[i]->server.http_endpoint())["tailcut_replica_applied_index"];
  };
  CHECK(WaitUntil([&] { return applied(leader) >= applied(next) && applied(next) > 0; }, 20));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the third replica's last apply: a heartbeat
  for (size_t i = 0; i < g.size(); ++i) g.Stop(i);
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("replica " << i + 1 << (i == leader ? " (wiped)" : i == next ? " (the new leader)" : ""));
    std::set<JobId> ids;
    for (const JournaledJob& j : g.JournalOf(i)) ids.insert(j.id);
    CHECK(ids == kept);
  }
  bool snapshot = false;
  for (const auto& e : std::filesystem::directory_iterator(g.RaftDir(leader)))
    snapshot = snapshot || e.path().filename().string().rfind("snapshot-", 0) == 0;
  CHECK(snapshot);  // it rejoined from one
}
