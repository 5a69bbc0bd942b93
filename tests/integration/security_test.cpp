// End to end for issue #11: keys on the real daemons, job ownership,
// revocation on SIGHUP, and keys on a non-loopback interface.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "daemon_cluster.h"
#include "tailcut/client/client.h"
#include "tailcut/client/local_cluster.h"
#include "tailcut/common/process.h"
#include "tailcut/server/journal.h"
#include "tailcut/wire/security.h"
#include "tailcut/wire/wire.h"

using namespace tailcut;

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Waits (at most 60 s) for job `id`, which must succeed; its results.
auto ResultsOfSucceeded(Client& client, JobId id) {
  WaitOptions w;
  w.timeout_s = 60;
  auto st = client.Wait(id, w);
  REQUIRE(st.ok());
  CHECK(st->state() == wire::JOB_SUCCEEDED);
  auto results = client.Results(id);
  REQUIRE(results.ok());
  return std::move(results).value();
}

// Polls `pred` for up to `seconds`.
template <typename Pred>
bool Eventually(Pred pred, double seconds = 15) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

// An IPv4 address of this machine that is not loopback, or "".
std::string NonLoopbackAddress() {
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return "";
  std::string found;
  for (ifaddrs* i = all; i && found.empty(); i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text);
    if (std::string(text).rfind("127.", 0) != 0) found = text;
  }
  freeifaddrs(all);
  return found;
}

}  // namespace

TEST_CASE("security: a job is its owner's: others may not read, watch or cancel it, an admin may") {
  testing::DaemonCluster c(testing::DaemonClusterOptions{});
  auto id = c.client->Submit(FanoutJob("sleep", "ms=3000", 2));
  REQUIRE(id.ok());
  Client other(c.cluster->client_options("other"));
  Client admin(c.cluster->client_options("admin"));

  for (auto result : {other.GetStatus(*id).status(), other.Cancel(*id).status(), other.Results(*id).status(),
                      other.Wait(*id).status()}) {
    CHECK(result.code() == Status::Code::kPermissionDenied);
    CHECK_THAT(result.message(), Catch::Contains("not your job"));
  }
  // An id nobody has is unknown, not "not yours".
  CHECK(other.GetStatus(*id + 1000).status().code() == Status::Code::kNotFound);
  // The same request key from another owner is another job.
  wire::JobSpec job = FanoutJob("noop", "", 1);
  job.set_request_key("shared-key");
  auto mine = c.client->Submit(job), theirs = other.Submit(job);
  REQUIRE(mine.ok());
  REQUIRE(theirs.ok());
  CHECK(*mine != *theirs);

  auto st = c.client->GetStatus(*id);
  REQUIRE(st.ok());
  CHECK(st->owner() == *LoadPublicKey(c.cluster->keys_dir() + "/client.pub"));  // the owner's key
  auto cancelled = admin.Cancel(*id);
  REQUIRE(cancelled.ok());
  CHECK(cancelled->state() == wire::JOB_CANCELLED);
}

TEST_CASE("security: a key the scheduler does not trust is refused, added and SIGHUP'd it works") {
  testing::DaemonCluster c(testing::DaemonClusterOptions{});
  const std::string keys = c.cluster->keys_dir();
  auto late = GenerateKeyPair("late", PeerRole::kClient);
  REQUIRE(late.ok());
  REQUIRE(WriteKeyFiles(keys + "/late", *late).ok());
  ClientOptions o = c.cluster->client_options("late");
  o.timeout_s = 5;
  {
    Client refused(o);
    auto r = refused.Executors();
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kPermissionDenied);
    CHECK_THAT(r.status().message(), Catch::Contains("refused this key"));
  }
  std::ofstream(keys + "/trusted.toml", std::ios::app) << PublicKeyEntry(*late);
  c.cluster->SignalScheduler(SIGHUP);
  CHECK(Eventually([&] { return Client(o).Executors().ok(); }));

  // And taken away again: even the open connection is refused at once.
  Client admitted(o);
  REQUIRE(admitted.Executors().ok());
  std::string trusted = ReadFile(keys + "/trusted.toml");
  trusted.erase(trusted.find(PublicKeyEntry(*late)));
  std::ofstream(keys + "/trusted.toml") << trusted;
  c.cluster->SignalScheduler(SIGHUP);
  CHECK(Eventually([&] {
    auto r = admitted.Executors();
    return !r.ok() && r.status().message().find("no longer trusted") != std::string::npos;
  }));
}

TEST_CASE("security: an executor needs an executor key, a client's key does not make one") {
  testing::DaemonCluster c(testing::DaemonClusterOptions{});
  const std::string keys = c.cluster->keys_dir();
  LocalExecutorSpec impostor;
  impostor.flags = {"--key-file", keys + "/client.key", "--name", "impostor"};
  impostor.expect_exit = true;
  auto index = c.cluster->AddExecutor(impostor);
  REQUIRE(index.ok());
  const std::string log = c.cluster->log_dir() + "/executor-" + std::to_string(*index + 1) + ".log";
  CHECK(Eventually([&] { return ReadFile(log).find("refused this key") != std::string::npos; }));
  auto list = c.client->Executors();
  REQUIRE(list.ok());
  CHECK(list->size() == 1);
  // Nor does no key at all.
  LocalExecutorSpec keyless;
  keyless.flags = {"--set", "key_file=\"\"", "--set", "scheduler_key=\"\""};
  keyless.expect_exit = true;
  index = c.cluster->AddExecutor(keyless);
  REQUIRE(index.ok());
  const std::string log2 = c.cluster->log_dir() + "/executor-" + std::to_string(*index + 1) + ".log";
  CHECK(Eventually([&] { return ReadFile(log2).find("wants keys") != std::string::npos; }));
}

TEST_CASE("security: beyond loopback the scheduler needs keys, and with them serves only trusted keys") {
  const std::string ip = NonLoopbackAddress();
  if (ip.empty()) {
    WARN("no non-loopback IPv4 interface on this machine; skipping");
    return;
  }
  ServerOptions open;
  open.executor_endpoint = "tcp://" + ip + ":*";
  open.client_endpoint = "tcp://" + ip + ":*";
  {
    SchedulerServer refused(open);
    Status s = refused.Bind();
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.message(), Catch::Contains("needs keys"));
  }
  // With keys (a LocalCluster's, for an executor fleet): a keyed client
  // from that address is served, a keyless one is told keys are wanted.
  LocalClusterOptions lo;
  lo.name = "sec";
  lo.executor_binary = TAILCUT_EXECUTOR_BIN;
  auto cluster = LocalCluster::Start(lo);
  REQUIRE(cluster.ok());
  ServerOptions keyed = open;
  keyed.key_file = (*cluster)->keys_dir() + "/scheduler.key";
  keyed.trusted_keys = (*cluster)->keys_dir() + "/trusted.toml";
  SchedulerServer server(keyed);
  REQUIRE(server.Bind().ok());
  std::thread loop([&] { server.Run(); });
  ClientOptions co = (*cluster)->client_options("client");
  co.endpoint = server.client_endpoint();
  co.timeout_s = 5;
  CHECK(Client(co).Executors().ok());
  co.key_file = co.scheduler_key = "";
  auto keyless = Client(co).Executors();
  CHECK(keyless.status().code() == Status::Code::kPermissionDenied);
  CHECK_THAT(keyless.status().message(), Catch::Contains("wants keys"));
  server.Stop();
  loop.join();
}

namespace {

// Runs `argv` to its end (at most 20 s); its exit code and log.
std::pair<int, std::string> RunToExit(const std::vector<std::string>& argv, const std::string& log) {
  ChildProcess p(argv, log);
  REQUIRE(p.started());
  REQUIRE(Eventually([&] { return !p.Alive(); }, 20));
  return {WIFEXITED(p.exit_status()) ? WEXITSTATUS(p.exit_status()) : -1, ReadFile(log)};
}

// A new key `name` of `role` in the cluster's keys folder, trusted (SIGHUP).
KeyPair TrustNewKey(testing::DaemonCluster& c, const std::string& name, PeerRole role) {
  auto key = GenerateKeyPair(name, role);
  REQUIRE(key.ok());
  REQUIRE(WriteKeyFiles(c.cluster->keys_dir() + "/" + name, *key).ok());
  std::ofstream(c.cluster->keys_dir() + "/trusted.toml", std::ios::app) << PublicKeyEntry(*key);
  c.cluster->SignalScheduler(SIGHUP);
  return *key;
}

// Takes `key` out of the trusted list again (SIGHUP).
void Revoke(testing::DaemonCluster& c, const KeyPair& key) {
  const std::string path = c.cluster->keys_dir() + "/trusted.toml";
  std::string trusted = ReadFile(path);
  trusted.erase(trusted.find(PublicKeyEntry(key)));
  std::ofstream(path) << trusted;
  c.cluster->SignalScheduler(SIGHUP);
}

}  // namespace

TEST_CASE("security: a wide bind without keys is bad config, exit 2 as documented") {
  const std::string log = "/tmp/tailcut-widebind-" + std::to_string(getpid()) + ".log";
  auto [code, text] = RunToExit({TAILCUT_SCHEDULER_BIN, "--executor-endpoint", "tcp://*:0", "--client-endpoint",
                                 "tcp://127.0.0.1:0", "--set", "scheduler.state_dir=\"\"", "--http-listen", ""},
                                log);
  CHECK(code == 2);
  CHECK_THAT(text, Catch::Contains("needs keys"));
  std::remove(log.c_str());
}

TEST_CASE("security: a keyless executor refuses shell unless told to trust an unauthenticated scheduler") {
  const std::string log = "/tmp/tailcut-keyless-shell-" + std::to_string(getpid()) + ".log";
  auto [code, text] = RunToExit({TAILCUT_EXECUTOR_BIN, "--scheduler", "tcp://127.0.0.1:1", "--allow-shell"}, log);
  CHECK(code == 2);
  CHECK_THAT(text, Catch::Contains("--trust-unauthenticated-scheduler"));
  auto [code2, text2] = RunToExit({TAILCUT_EXECUTOR_BIN, "--scheduler", "tcp://127.0.0.1:1", "--set",
                                   "allow_kernels=\"sleep,shell\""},
                                  log);
  CHECK(code2 == 2);
  CHECK_THAT(text2, Catch::Contains("cannot tell its scheduler"));
  // With the flag it starts (and would run shell); --version-like quick exit
  // is not available, so: it keeps running until stopped.
  ChildProcess trusting({TAILCUT_EXECUTOR_BIN, "--scheduler", "tcp://127.0.0.1:1", "--allow-shell",
                         "--trust-unauthenticated-scheduler"},
                        log);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(trusting.Alive());
  trusting.Stop();
  std::remove(log.c_str());
}

TEST_CASE("security: a revoked executor key gets no more work from its next message on") {
  testing::DaemonClusterOptions d;
  d.scheduler_flags = {"--set", "core.lost_after_s=60"};  // revocation, not loss, must remove it
  testing::DaemonCluster c(d);
  const std::string keys = c.cluster->keys_dir();
  const KeyPair late = TrustNewKey(c, "late-exec", PeerRole::kExecutor);
  LocalExecutorSpec e;
  e.flags = {"--key-file", keys + "/late-exec.key", "--name", "late-exec", "--slots", "4"};
  e.expect_exit = true;
  REQUIRE(c.cluster->AddExecutor(e).ok());
  REQUIRE(c.cluster->WaitForExecutors(2, 30).ok());
  ExecutorId late_id = 0;
  auto fleet = c.client->Executors();
  REQUIRE(fleet.ok());
  for (const auto& x : *fleet)
    if (x.name() == "late-exec") late_id = x.executor_id();
  REQUIRE(late_id != 0);

  Revoke(c, late);
  // Its next heartbeat (1 s) removes it, long before lost_after_s.
  CHECK(Eventually([&] {
    auto list = c.client->Executors();
    return list.ok() && list->size() == 1;
  }, 10));
  wire::JobSpec job = FanoutJob("sleep", "ms=20", 40);
  job.set_return_outputs(true);
  auto id = c.client->Submit(job);
  REQUIRE(id.ok());
  for (const auto& r : ResultsOfSucceeded(*c.client, *id)) CHECK(r.executor_id() != late_id);
}

TEST_CASE("security: a revoked client's open connection gets no more streamed results from its next message on") {
  testing::DaemonCluster c(testing::DaemonClusterOptions{});
  const KeyPair late = TrustNewKey(c, "late-client", PeerRole::kClient);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  zmq::context_t ctx;
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::rcvtimeo, 200);
  const ClientOptions co = c.cluster->client_options("late-client");
  REQUIRE(ApplyPeerKeys(s, {co.key_file, co.scheduler_key}).ok());
  s.connect(c.cluster->client_endpoint());
  auto send = [&](wire::ClientRequest req, uint64_t id) {
    req.set_version(kProtocolVersion);
    req.set_request_id(id);
    REQUIRE(s.send(ToFrame(req), zmq::send_flags::none));
  };
  wire::ClientRequest submit;
  *submit.mutable_submit()->mutable_job() = FanoutJob("sleep", "ms=200", 60);  // ~6 s on 2 slots
  submit.mutable_submit()->mutable_job()->set_stream_results(true);
  send(submit, 1);
  // Results stream in ...
  size_t pushed = 0;
  for (int i = 0; i < 50 && pushed == 0; ++i) {
    zmq::message_t f;
    wire::ClientReply r;
    if (s.recv(f) && FromFrame(f, &r) && r.has_results()) pushed += r.results().results_size();
  }
  REQUIRE(pushed > 0);
  // ... until the key is revoked: its next message is refused, and then nothing more comes.
  Revoke(c, late);
  bool refused = false;
  for (int i = 0; i < 50 && !refused; ++i) {
    wire::ClientRequest list;
    list.mutable_list_executors();
    send(list, 100 + i);
    for (int j = 0; j < 5 && !refused; ++j) {
      zmq::message_t f;
      wire::ClientReply r;
      if (s.recv(f) && FromFrame(f, &r) && r.has_error())
        refused = r.error().code() == wire::Error::UNAUTHENTICATED;
    }
  }
  REQUIRE(refused);
  size_t after = 0;
  for (int i = 0; i < 15; ++i) {  // 3 s: the job still runs and commits
    zmq::message_t f;
    wire::ClientReply r;
    if (s.recv(f) && FromFrame(f, &r) && (r.has_results() || r.has_status())) ++after;
  }
  CHECK(after == 0);
}

// Issue 32: after a scheduler crash, a second executor offering the same
// kernel (the fleet's own key, another name) registers first and claims the
// attempts the first one holds, with forged results: it gets none of them.
TEST_CASE("security: after a scheduler SIGKILL, an executor that never held an attempt cannot adopt it") {
  testing::DaemonCluster c(testing::DaemonClusterOptions{});
  wire::JobSpec job = FanoutJob("sleep", "ms=3000", 2);
  job.set_return_outputs(true);
  auto id = c.client->Submit(job);
  REQUIRE(id.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // launched, and journaled (<= 50 ms)
  c.cluster->SignalExecutor(0, SIGSTOP);                        // the holder stays away until the rogue has spoken
  c.cluster->SignalScheduler(SIGKILL);
  REQUIRE(Eventually([&] { return !c.cluster->SchedulerAlive(); }, 10));
  std::vector<JournaledLaunch> held;
  {
    JournalOptions jo;
    jo.path = c.cluster->log_dir() + "/state/journal.db";
    auto journal = Journal::Open(jo);
    REQUIRE(journal.ok());
    uint32_t since = 0;
    REQUIRE((*journal)->LoadLaunches(&held, &since).ok());
  }
  REQUIRE(held.size() == 2);
  std::set<uint64_t> attempts;
  for (const JournaledLaunch& l : held) {
    CHECK(l.identity.size() > 5);
    CHECK(l.identity.substr(l.identity.size() - 5) == "\nit-0");  // key + name (docs/SECURITY.md)
    attempts.insert(l.attempt);
  }
  REQUIRE(c.cluster->RestartScheduler().ok());

  zmq::context_t ctx;
  zmq::socket_t rogue(ctx, zmq::socket_type::dealer);
  rogue.set(zmq::sockopt::linger, 0);
  if (!c.cluster->keys_dir().empty())
    REQUIRE(
        ApplyPeerKeys(rogue, {c.cluster->keys_dir() + "/executor.key", c.cluster->keys_dir() + "/scheduler.pub"}).ok());
  rogue.connect(c.cluster->executor_endpoint());
  wire::ExecutorMessage m;
  m.set_version(kProtocolVersion);
  wire::Register* r = m.mutable_register_();
  r->set_name("rogue");
  r->set_cpu_slots(2);
  r->add_kernels("sleep");
  for (const JournaledLaunch& l : held) {
    wire::HeldAttempt* h = r->add_running();
    h->set_attempt_id(l.attempt);
    h->set_job_id(l.job);
    h->set_task_index(l.task);
    h->set_started(true);
    wire::AttemptResult* res = r->add_undelivered();
    res->set_attempt_id(l.attempt);
    res->set_job_id(l.job);
    res->set_task_index(l.task);
    res->set_outcome(wire::AttemptResult::OK);
    res->set_output("FORGED");
    res->set_run_s(0.01);
  }
  REQUIRE(rogue.send(ToFrame(m), zmq::send_flags::none));
  // Its claims are cancelled (they come before its RegisterAck).
  std::set<uint64_t> cancelled;
  bool registered = false;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!registered && std::chrono::steady_clock::now() < until) {
    zmq::pollitem_t item{static_cast<void*>(rogue), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(200)) == 0) continue;
    zmq::message_t in;
    if (!rogue.recv(in, zmq::recv_flags::dontwait)) continue;
    wire::SchedulerToExecutor reply;
    REQUIRE(FromFrame(in, &reply));
    if (reply.has_work())
      for (uint64_t a : reply.work().cancel()) cancelled.insert(a);
    registered = reply.has_registered();
  }
  REQUIRE(registered);
  CHECK(cancelled == attempts);
  c.cluster->SignalExecutor(0, SIGCONT);  // the holder comes back with its attempts

  auto results = ResultsOfSucceeded(*c.client, *id);
  REQUIRE(results.size() == 2);
  for (const auto& res : results) {
    CHECK(res.output() != "FORGED");
    CHECK(attempts.count(res.attempt_id()) == 1);  // the holder's own attempts committed, adopted
  }
}
