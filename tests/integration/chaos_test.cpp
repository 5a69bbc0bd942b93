// Chaos soak (docs/RELIABILITY.md): a stream of jobs on a local cluster
// while executors are killed -9 every few seconds and the scheduler itself
// every ~20 s (each restarted), then checked from the journal and from the
// clients' own records: every accepted job finished, every task committed
// exactly once, no client got a wrong status. A rogue executor sends
// forged, duplicated and out-of-order results throughout (for guessed
// attempt, job and task ids of work never handed to it): none may commit.
//
// The second case runs idempotent shell jobs that write files into their
// output_dir (docs/JOBS.md, "Output directories") on executors that delay
// attempts at random, so copies race: every task of a succeeded job must end
// with exactly one complete directory, the committed attempt's, and no
// attempt directory may be left behind.
//
// With TAILCUT_CHAOS_ROGUE_EDGE=1 (scripts/chaos.sh --rogue-edge) a rogue
// edge takes real work and never runs it (RogueEdge below).
//
// In both, the test-only policy race_copies (race_copies_plugin.cpp) asks
// for a copy of every task as its first attempt starts, so exactly-once
// is checked under racing copies every run (the default chain's copies sit
// behind the payoff controller, which may launch none).
//
// ctest runs a short version (TAILCUT_CHAOS_SECONDS unset: ~30 s each, >= 3
// scheduler kills, >= 10 executor kills); scripts/chaos.sh runs it longer.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "metrics_scrape.h"
#include "tailcut/client/client.h"
#include "tailcut/client/local_cluster.h"
#include "tailcut/server/journal.h"
#include "tailcut/wire/security.h"
#include "tailcut/wire/wire.h"

using namespace tailcut;

namespace {

using WallClock = std::chrono::steady_clock;

double EnvSeconds(const char* name, double def) {
  const char* v = std::getenv(name);
  return v && *v ? std::atof(v) : def;
}

struct ClientRecord {
  JobId id = 0;
  uint32_t tasks = 0;
  bool finished = false;
  bool succeeded = false;
  bool wrong_status = false;   // a status of another job, or a lost one
  size_t results = 0, duplicate_results = 0, forged_results = 0;
  std::map<uint32_t, uint64_t> committed;  // task -> the attempt that committed it
  std::string output_dir;                  // output jobs only
  std::string error;
};

std::string FirstLine(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

constexpr char kForged[] = "FORGED";

// `s` (a DEALER) connected to the executor endpoint with `keys`, as a
// peer that never blocks on a full queue; false when the keys do not load.
bool Dial(zmq::socket_t& s, const std::string& endpoint, const PeerKeys& keys) {
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::sndhwm, 1000);
  if (!ApplyPeerKeys(s, keys).ok()) return false;
  s.connect(endpoint);
  return true;
}

// Registers as "rogue" with the fleet's own executor key (a trusted
// executor gone bad; identity is key and name) offering no kernel the jobs
// use, and then, every
// few ms, claims attempts it was never given: Reports with started,
// progress and results (each result twice, results before starts), and
// every ~second a Register bringing "held" attempts and "undelivered"
// results. Ids are guessed where the real ones are: attempt ids of every
// run so far ((epoch << 40) + n), mostly the newest (running) jobs.
class RogueExecutor {
 public:
  RogueExecutor(std::string endpoint, PeerKeys keys, const std::atomic<int>& restarts,
                const std::atomic<uint64_t>& jobs)
      : endpoint_(std::move(endpoint)), keys_(std::move(keys)), restarts_(restarts), jobs_(jobs),
        thread_([this] { Run(); }) {}
  ~RogueExecutor() {
    stop_ = true;
    thread_.join();
  }
  uint64_t sent() const { return sent_; }

 private:
  void Run() {
    zmq::context_t ctx;
    zmq::socket_t s(ctx, zmq::socket_type::dealer);
    if (!Dial(s, endpoint_, keys_)) return;
    std::mt19937_64 rng(99);
    for (int turn = 0; !stop_; ++turn) {
      wire::ExecutorMessage m;
      m.set_version(kProtocolVersion);
      if (turn % 100 == 0) {
        wire::Register* r = m.mutable_register_();
        r->set_name("rogue");
        r->set_cpu_slots(4);
        r->add_kernels("rogue");
        for (int i = 0; i < 20; ++i) {
          uint64_t a, j;
          uint32_t t;
          Guess(rng, &a, &j, &t);
          wire::HeldAttempt* h = r->add_running();
          h->set_attempt_id(a);
          h->set_job_id(j);
          h->set_task_index(t);
          h->set_started(true);
        }
        for (int i = 0; i < 50; ++i) Forge(rng, r->add_undelivered());
      } else {
        wire::Report* r = m.mutable_report();
        for (int i = 0; i < 50; ++i) {
          wire::AttemptResult* res = r->add_results();
          Forge(rng, res);
          *r->add_results() = *res;  // duplicated ...
          r->add_started()->set_attempt_id(res->attempt_id());  // ... and its start after it
          wire::AttemptProgress* p = r->add_progress();
          p->set_attempt_id(res->attempt_id());
          p->set_fraction(0.5f);
        }
      }
      if (s.send(ToFrame(m), zmq::send_flags::dontwait)) ++sent_;
      zmq::message_t in;
      while (s.recv(in, zmq::recv_flags::dontwait)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  // Ids near the real ones: every run's epoch so far, the first few
  // thousand attempts of each, the jobs accepted so far.
  void Guess(std::mt19937_64& rng, uint64_t* attempt, uint64_t* job, uint32_t* task) {
    const uint64_t epochs = static_cast<uint64_t>(restarts_.load()) + 1;
    *attempt = ((1 + rng() % epochs) << 40) + 1 + rng() % 6000;
    const uint64_t newest = jobs_.load();
    // Mostly the newest jobs (the running ones), some of any age.
    *job = rng() % 4 ? std::max<uint64_t>(1, newest + 2 - rng() % 8) : 1 + rng() % (newest + 5);
    *task = static_cast<uint32_t>(rng() % 25);
  }
  void Forge(std::mt19937_64& rng, wire::AttemptResult* r) {
    uint64_t a, j;
    uint32_t t;
    Guess(rng, &a, &j, &t);
    r->set_attempt_id(a);
    r->set_job_id(j);
    r->set_task_index(t);
    r->set_outcome(wire::AttemptResult::OK);
    r->set_output(kForged);
    r->set_run_s(0.01);
  }

  std::string endpoint_;
  PeerKeys keys_;
  const std::atomic<int>& restarts_;
  const std::atomic<uint64_t>& jobs_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> sent_{0};
  std::thread thread_;
};

// An edge gone bad (docs/EDGE.md: an edge registers upward as one executor
// with its fleet's slots), with the fleet's own executor key: it offers the
// jobs' kernels, so it is handed real work, and never runs any of it. Of
// what it is handed it hands a third back at once (REFUSED), starts a third
// and then hands it back with absurd figures (progress NaN, run_s -1, the
// result twice, its start after it), and sits on the rest without a word,
// while its heartbeats say it is alive. Every task must still commit once,
// on an honest executor.
class RogueEdge {
 public:
  RogueEdge(std::string endpoint, PeerKeys keys)
      : endpoint_(std::move(endpoint)), keys_(std::move(keys)), thread_([this] { Run(); }) {}
  ~RogueEdge() {
    stop_ = true;
    thread_.join();
  }
  uint64_t handed() const { return handed_; }

 private:
  void Run() {
    zmq::context_t ctx;
    zmq::socket_t s(ctx, zmq::socket_type::dealer);
    if (!Dial(s, endpoint_, keys_)) return;
    std::mt19937_64 rng(17);
    auto send = [&](const wire::ExecutorMessage& m) { (void)s.send(ToFrame(m), zmq::send_flags::dontwait); };
    auto register_ = [&] {
      wire::ExecutorMessage m;
      m.set_version(kProtocolVersion);
      wire::Register* r = m.mutable_register_();
      r->set_name("rogue-edge");
      r->set_cpu_slots(16);  // "its fleet's slots"
      r->add_kernels("sleep");
      r->add_kernels("shell");
      send(m);
    };
    register_();
    for (auto last_report = WallClock::now(); !stop_;) {
      wire::ExecutorMessage out;
      out.set_version(kProtocolVersion);
      wire::Report* report = out.mutable_report();
      zmq::message_t in;
      while (s.recv(in, zmq::recv_flags::dontwait)) {
        wire::SchedulerToExecutor m;
        if (!m.ParseFromArray(in.data(), static_cast<int>(in.size()))) continue;
        if (m.has_error()) register_();  // a restarted scheduler does not know us
        if (!m.has_work()) continue;
        for (const wire::Assignment& a : m.work().assign()) {
          ++handed_;
          switch (rng() % 3) {
            case 0: {
              wire::AttemptResult* r = report->add_results();
              r->set_attempt_id(a.attempt_id());
              r->set_job_id(a.job_id());
              r->set_task_index(a.task_index());
              r->set_outcome(wire::AttemptResult::REFUSED);
              r->set_error("rogue edge: not now");
              break;
            }
            case 1: {
              wire::AttemptProgress* p = report->add_progress();
              p->set_attempt_id(a.attempt_id());
              p->set_fraction(std::numeric_limits<float>::quiet_NaN());
              wire::AttemptResult* r = report->add_results();
              r->set_attempt_id(a.attempt_id());
              r->set_job_id(a.job_id());
              r->set_task_index(a.task_index());
              r->set_outcome(wire::AttemptResult::REFUSED);
              r->set_run_s(-1);
              *report->add_results() = *r;
              report->add_started()->set_attempt_id(a.attempt_id());
              break;
            }
            default: break;  // held, never started, never answered
          }
        }
      }
      if (report->results_size() || WallClock::now() - last_report > std::chrono::milliseconds(50)) {
        send(out);
        last_report = WallClock::now();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  std::string endpoint_;
  PeerKeys keys_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> handed_{0};
  std::thread thread_;
};

// What a succeeded output job left in its output_dir: exactly task-0 ..
// task-(n-1), each complete and holding the committed attempt's files, and
// no attempt directory. Returns the problems found (0: as it must be).
size_t CheckOutputDir(const ClientRecord& r) {
  namespace fs = std::filesystem;
  size_t problems = 0;
  std::set<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(r.output_dir, ec), end; !ec && it != end; it.increment(ec))
    names.insert(it->path().filename().string());
  for (uint32_t t = 0; t < r.tasks; ++t) {
    const fs::path dir = fs::path(r.output_dir) / ("task-" + std::to_string(t));
    auto c = r.committed.find(t);
    const std::string who = std::to_string(r.id) + "." + std::to_string(t) + "." +
                            (c == r.committed.end() ? "?" : std::to_string(c->second));
    if (!names.erase(dir.filename().string()) || FirstLine(dir / "done") != "complete" ||
        FirstLine(dir / "who") != who) {
      UNSCOPED_INFO("job " << r.id << ": " << dir.string() << " missing, partial or not attempt " << who);
      ++problems;
    }
  }
  names.erase(".tailcut-attempts");
  for (const std::string& extra : names) {
    UNSCOPED_INFO("job " << r.id << ": unexpected " << extra << " in " << r.output_dir);
    ++problems;
  }
  for (fs::directory_iterator it(fs::path(r.output_dir) / ".tailcut-attempts", ec), end; !ec && it != end;
       it.increment(ec)) {
    UNSCOPED_INFO("job " << r.id << ": attempt directory left behind: " << it->path().string());
    ++problems;
  }
  return problems;
}

std::string Describe(const wire::JobStatus& s) {
  return "state " + wire::JobState_Name(s.state()) + ", " + std::to_string(s.committed()) + "/" +
         std::to_string(s.tasks()) + " committed, " + std::to_string(s.running()) + " running, " +
         std::to_string(s.attempts()) + " attempts (" + std::to_string(s.copies()) + " copies, " +
         std::to_string(s.failed_attempts()) + " failed)" + (s.reason().empty() ? "" : ", reason: " + s.reason());
}

// Prints every job a client saw unfinished (or not succeeded) with its
// status now, and every executor the scheduler lists: a job left behind
// says whether its tasks wait, run somewhere, or were given up on.
void ExplainUnfinished(LocalCluster& cluster, const std::vector<ClientRecord>& records) {
  std::vector<const ClientRecord*> left;
  for (const ClientRecord& r : records)
    if (!r.succeeded) left.push_back(&r);
  if (left.empty()) return;
  if (!cluster.SchedulerAlive()) {  // nothing restarts it: every job still running is left
    std::ifstream in(cluster.log_dir() + "/scheduler.log");
    std::deque<std::string> tail;
    for (std::string line; std::getline(in, line);) {
      tail.push_back(line);
      if (tail.size() > 5) tail.pop_front();
    }
    std::printf("chaos: the scheduler is not running; its log ends:\n");
    for (const std::string& line : tail) std::printf("  %s\n", line.c_str());
  }
  ClientOptions co = cluster.client_options();
  co.timeout_s = 10;
  Client client(co);
  for (const ClientRecord* r : left) {
    auto st = client.GetStatus(r->id);
    std::printf("chaos: job %llu (%u tasks) left %s (the client: %s); now: %s\n",
                static_cast<unsigned long long>(r->id), r->tasks, r->finished ? "failed" : "unfinished",
                r->error.c_str(), st.ok() ? Describe(*st).c_str() : st.status().message().c_str());
  }
  auto executors = client.Executors();
  if (!executors.ok()) {
    std::printf("chaos: executors: %s\n", executors.status().message().c_str());
    return;
  }
  for (const wire::ExecutorInfo& e : *executors)
    std::printf("chaos: executor %llu %s: %u slots, %u running, %llu finished, health %s%s, seen %.1f s ago\n",
                static_cast<unsigned long long>(e.executor_id()), e.name().c_str(), e.cpu_slots(), e.running(),
                static_cast<unsigned long long>(e.finished()),
                wire::ExecutorHealth::State_Name(e.health().state()).c_str(), e.quarantined() ? ", quarantined" : "",
                e.last_seen_s_ago());
}

void RunChaos(bool output_jobs) {
  const double seconds = EnvSeconds("TAILCUT_CHAOS_SECONDS", 30);
  const double executor_kill_every = EnvSeconds("TAILCUT_CHAOS_EXECUTOR_KILL_S", 2.0);
  const double scheduler_kill_every = EnvSeconds("TAILCUT_CHAOS_SCHEDULER_KILL_S", seconds >= 120 ? 20 : 7);
  const int clients = 4;

  LocalClusterOptions o;
  o.name = output_jobs ? "chaos-output" : "chaos";
  o.scheduler_binary = TAILCUT_SCHEDULER_BIN;
  o.executor_binary = TAILCUT_EXECUTOR_BIN;
  // Every job stays queryable (and journaled) to the end, for the checks.
  o.http = true;  // the rogue's refused reports, read at the end
  // Racing copies every run: the test-only race_copies policy asks for a
  // copy of every task as its first attempt starts, outside the payoff
  // controller (which may launch none of the default chain's); a quarter
  // of the slots may hold copies.
  o.scheduler_flags = {"--policy",    std::string("default,plugin:") + TAILCUT_RACE_COPIES_PLUGIN + "#race_copies",
                       "--set",       "core.redundancy_budget=0.25",
                       "--set",       "scheduler.heartbeat_ms=100",
                       "--set",       "core.lost_after_s=1.0",
                       "--set",       "core.job_retention=1000000",
                       "--log-level", "warn"};
  auto started = LocalCluster::Start(o);
  REQUIRE(started.ok());
  std::unique_ptr<LocalCluster> cluster = std::move(started).value();
  const int executors = 4;
  for (int i = 0; i < executors; ++i) {
    LocalExecutorSpec e;
    e.flags = {"--slots", "2", "--name", "chaos-" + std::to_string(i), "--log-level", "warn"};
    e.restart = true;  // a supervisor brings killed executors back
    if (output_jobs) {
      e.allow_shell = true;
      // Random stragglers, so that the policies' copies race the originals.
      e.flags.insert(e.flags.end(), {"--delay-prob", "0.2", "--delay-ms", "400", "--fault-seed", std::to_string(i)});
    }
    REQUIRE(cluster->AddExecutor(e).ok());
  }
  REQUIRE(cluster->WaitForExecutors(executors, 30).ok());

  std::atomic<int> restarts{0};
  std::atomic<uint64_t> accepted{0};
  PeerKeys rogue_keys;
  if (!cluster->keys_dir().empty())
    rogue_keys = {cluster->keys_dir() + "/executor.key", cluster->keys_dir() + "/scheduler.pub"};
  auto rogue = std::make_unique<RogueExecutor>(cluster->executor_endpoint(), rogue_keys, restarts, accepted);
  // The rogue edge soaks up free slots for a while at first, until its rests
  // grow long: in the soak (scripts/chaos.sh --rogue-edge), not the 30 s case.
  std::unique_ptr<RogueEdge> rogue_edge;
  if (EnvSeconds("TAILCUT_CHAOS_ROGUE_EDGE", 0) > 0)
    rogue_edge = std::make_unique<RogueEdge>(cluster->executor_endpoint(), rogue_keys);

  std::mutex mu;
  std::vector<ClientRecord> records;
  std::atomic<bool> submitting{true};
  std::vector<std::thread> threads;
  const std::string out_root = cluster->log_dir() + "/out";
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      ClientOptions co = cluster->client_options();
      co.timeout_s = 30;
      Client client(co);
      std::mt19937 rng(static_cast<unsigned>(1000 + c));
      for (int k = 0; submitting; ++k) {
        ClientRecord r;
        r.tasks = 5 + rng() % 20;
        const std::string ms = std::to_string(10 + rng() % 40);
        wire::JobSpec job = FanoutJob("sleep", "ms=" + ms, r.tasks);
        if (output_jobs) {
          // Two files, the second after a pause: a directory that has `done`
          // but not the attempt's own `who` would be a mix of attempts.
          job = FanoutJob("shell",
                          "d=\"$TAILCUT_OUTPUT_DIR\"; basename \"$d\" > \"$d/who\"; sleep 0.0" + ms +
                              "; echo complete > \"$d/done\"",
                          r.tasks);
          r.output_dir = out_root + "/" + std::to_string(c) + "-" + std::to_string(k);
          std::filesystem::create_directories(r.output_dir);
          job.set_output_dir(r.output_dir);
          job.set_idempotent(true);  // writes only its own directory: copies may race
        }
        job.set_return_outputs(true);
        job.set_max_attempts(20);  // random executor kills are not the task's fault
        auto id = client.Submit(job);
        if (!id.ok()) {  // never accepted: nothing to account for
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          continue;
        }
        r.id = *id;
        accepted.store(std::max<uint64_t>(accepted.load(), *id));
        WaitOptions w;
        w.timeout_s = 180;
        w.reconnect_timeout_s = 120;
        auto st = client.Wait(*id, w);
        if (st.ok()) {
          r.finished = IsTerminal(st->state());
          r.succeeded = st->state() == wire::JOB_SUCCEEDED;
          r.wrong_status = st->job_id() != *id || st->request_key().empty();
          if (!r.succeeded) r.error = st->reason();
          auto results = client.Results(*id);
          if (results.ok()) {
            std::set<uint32_t> seen;
            for (const auto& x : *results) {
              r.duplicate_results += !seen.insert(x.task_index()).second;
              r.committed[x.task_index()] = x.attempt_id();
              r.forged_results += x.output() == kForged;
            }
            r.results = seen.size();
          } else {
            r.error = results.status().message();
          }
        } else {
          r.error = st.status().message();
          r.wrong_status = st.status().message().find("was lost") != std::string::npos;
        }
        std::lock_guard<std::mutex> lock(mu);
        records.push_back(std::move(r));
      }
    });
  }

  // The chaos: kill -9 a random executor every few seconds, the scheduler
  // every scheduler_kill_every seconds; restart each.
  int executor_kills = 0, scheduler_kills = 0;
  std::mt19937 rng(7);
  auto t0 = WallClock::now();
  double next_exec = executor_kill_every, next_sched = scheduler_kill_every;
  for (;;) {
    double t = std::chrono::duration<double>(WallClock::now() - t0).count();
    if (t >= seconds) break;
    if (t >= next_exec) {
      cluster->SignalExecutor(rng() % executors, SIGKILL);
      ++executor_kills;
      next_exec += executor_kill_every;
    }
    if (t >= next_sched) {
      cluster->SignalScheduler(SIGKILL);
      REQUIRE(cluster->RestartScheduler().ok());
      ++scheduler_kills;
      restarts = scheduler_kills;
      next_sched += scheduler_kill_every;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  submitting = false;
  for (auto& t : threads) t.join();
  // The last restart took: a scheduler that exited at its start (a port
  // taken meanwhile) leaves every job behind it unfinished.
  const bool scheduler_alive = cluster->SchedulerAlive();
  CHECK(scheduler_alive);
  // Which jobs were left, and why: their status now and the fleet as the
  // scheduler sees it (docs/RELIABILITY.md, "Chaos soak").
  ExplainUnfinished(*cluster, records);
  // Refused since the scheduler's last restart: the rogue was heard, and refused.
  const double refused = testing::ScrapeMetrics(cluster->http_endpoint())["tailcut_reports_refused_total"];
  const uint64_t rogue_messages = rogue->sent(), rogue_edge_handed = rogue_edge ? rogue_edge->handed() : 0;
  rogue.reset();
  rogue_edge.reset();
  std::string journal_path = cluster->log_dir() + "/state/journal.db";
  cluster->KeepLogs();  // removed below when everything checks out
  std::string log_dir = cluster->log_dir();
  cluster.reset();      // SIGTERM: the scheduler commits its journal and stops

  // The clients' own records.
  size_t jobs = records.size(), unfinished = 0, failed = 0, wrong = 0, missing = 0, duplicates = 0, tasks = 0,
         forged = 0;
  size_t output_problems = 0, promoted = 0;
  for (const ClientRecord& r : records) {
    if (output_jobs && r.succeeded) {
      output_problems += CheckOutputDir(r);
      promoted += r.tasks;
    }
    tasks += r.tasks;
    unfinished += !r.finished;
    failed += r.finished && !r.succeeded;
    wrong += r.wrong_status;
    missing += r.succeeded && r.results != r.tasks;
    duplicates += r.duplicate_results;
    forged += r.forged_results;
    if (!r.succeeded) UNSCOPED_INFO("job " << r.id << ": " << r.error);
  }
  // The journal: every accepted job finished, each task committed once.
  JournalOptions jo;
  jo.path = journal_path;
  auto journal = Journal::Open(jo);
  REQUIRE(journal.ok());
  std::vector<JournaledJob> journaled;
  REQUIRE((*journal)->Load(&journaled).ok());
  size_t journal_unfinished = 0, journal_double = 0, journal_incomplete = 0;
  std::map<JobId, uint32_t> tasks_of;
  for (const ClientRecord& r : records) tasks_of[r.id] = r.tasks;
  for (const JournaledJob& j : journaled) {
    journal_unfinished += !j.finished;
    if (!j.finished)
      std::printf("chaos: journal: job %llu unfinished with %zu commits\n", static_cast<unsigned long long>(j.id),
                  j.commits.size());
    std::set<TaskIndex> seen;
    for (const CommittedOutput& c : j.commits) {
      journal_double += !seen.insert(c.task).second;
      forged += c.output == kForged;
    }
    // A fan-out with rule "all" that succeeded: every task committed.
    auto it = tasks_of.find(j.id);
    if (j.finished && j.state == JobState::kSucceeded && it != tasks_of.end() && seen.size() != it->second)
      ++journal_incomplete;
  }
  std::printf("chaos%s: %.0f s, %zu jobs, %zu tasks, %d executor kills, %d scheduler kills; lost %zu, failed %zu, "
              "wrong statuses %zu, missing results %zu, double commits %zu (client) %zu (journal), journal: %zu jobs, "
              "%zu unfinished, %zu incomplete; rogue: %llu messages, %.0f refused since the last restart, forged commits %zu\n",
              output_jobs ? " (output_dir)" : "", seconds, jobs, tasks, executor_kills, scheduler_kills, unfinished,
              failed, wrong, missing, duplicates, journal_double, journaled.size(), journal_unfinished,
              journal_incomplete, static_cast<unsigned long long>(rogue_messages), refused, forged);
  // Copies raced the originals (race_copies), and still each task committed once.
  size_t copies = 0;
  for (const JournaledJob& j : journaled) copies += j.copies;
  std::printf("chaos%s: %zu copies launched\n", output_jobs ? " (output_dir)" : "", copies);
  if (rogue_edge_handed)
    std::printf("chaos%s: the rogue edge was handed %llu attempts and ran none\n", output_jobs ? " (output_dir)" : "",
                static_cast<unsigned long long>(rogue_edge_handed));
  CHECK(copies > 0);
  if (output_jobs) {
    std::printf(
        "chaos (output_dir): %zu task directories checked, %zu problems (missing, partial, not the "
        "committed attempt's, extra, or attempt directories left)\n",
        promoted, output_problems);
    CHECK(promoted > 0);
    CHECK(output_problems == 0);
  }
  CHECK(jobs > 0);
  CHECK(scheduler_kills >= 3);
  CHECK(executor_kills >= 10);
  CHECK(unfinished == 0);
  CHECK(failed == 0);
  CHECK(wrong == 0);
  CHECK(missing == 0);
  CHECK(duplicates == 0);
  CHECK(forged == 0);
  CHECK(rogue_messages > 100);
  if (rogue_edge) CHECK(rogue_edge_handed > 0);
  CHECK(refused > 0);
  CHECK(journal_double == 0);
  CHECK(journal_unfinished == 0);
  CHECK(journal_incomplete == 0);
  CHECK(journaled.size() >= jobs);  // every job a client saw accepted is in the journal
  if (unfinished + failed + wrong + missing + duplicates + journal_double + journal_unfinished + output_problems == 0) {
    std::error_code ec;
    std::filesystem::remove_all(log_dir, ec);
  } else {
    std::printf("chaos: logs and journal kept in %s\n", log_dir.c_str());
  }
}

}  // namespace

TEST_CASE("chaos: executors and the scheduler killed -9 and restarted, no accepted job lost, no task committed twice") {
  RunChaos(false);
}

TEST_CASE("chaos: output_dir jobs whose copies race end with one complete directory per task, the committed one's") {
  RunChaos(true);
}
