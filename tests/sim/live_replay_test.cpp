// `default` live (issue 39; docs/POLICIES.md, "Live."): the daemon's chain
// (LoadDaemonConfig) replays each class on a thread of its own
// (ReplayThread), so the scheduler's loop goes on while a replay runs, and
// a class whose shape favours another candidate switches to it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "daemon_config.h"
#include "tailcut/common/clock.h"
#include "tailcut/common/log.h"
#include "tailcut/core/scheduler_core.h"
#include "tailcut/policies/replay_thread.h"
#include "tailcut/policies/selector.h"

using namespace tailcut;

namespace {

// The scheduler's loop in miniature, on a fake clock: one-task jobs one at
// a time on two one-slot executors; every attempt draws an exponential run
// time (mean 50 ms: slowness belongs to the attempt, so a clone halves
// every quantile), the first to finish commits.
struct Loop {
  explicit Loop(PolicyChain chain) {
    REQUIRE(chain.size() == 1);
    selector = dynamic_cast<const SelectorPolicy*>(chain[0].get());
    REQUIRE(selector);
    CoreOptions o;
    o.lost_after_s = 0;
    core = std::make_unique<SchedulerCore>(o, &clock, std::move(chain));
    for (int i = 0; i < 2; ++i) {
      ExecutorDesc d;
      d.name = "e" + std::to_string(i);
      d.slots = 1;
      d.kernels = {"sleep"};
      core->AddExecutor(d);
    }
  }
  // One job, start to end; returns the attempts it launched.
  size_t Job() {
    JobDef d;
    d.name = "job";
    d.templ.kernel = "sleep";  // the class: "sleep"
    d.templ.args = "ms=50";
    d.template_count = 1;
    REQUIRE(core->SubmitJob(d).ok());
    std::vector<Command> cmds;
    core->TakeCommands(&cmds);
    std::vector<std::pair<double, AttemptId>> runs;
    for (const Command& c : cmds)
      if (auto* l = std::get_if<LaunchCmd>(&c)) {
        core->AttemptStarted(l->attempt);
        runs.emplace_back(run(rng), l->attempt);
      }
    REQUIRE(!runs.empty());
    std::sort(runs.begin(), runs.end());
    clock.Advance(runs[0].first);
    core->AttemptSucceeded(runs[0].second, "", runs[0].first);
    cmds.clear();
    core->TakeCommands(&cmds);  // the clone's cancel
    clock.Advance(0.001);
    core->Tick();
    cmds.clear();
    core->TakeCommands(&cmds);
    return runs.size();
  }
  FakeClock clock;
  std::unique_ptr<SchedulerCore> core;
  const SelectorPolicy* selector = nullptr;
  std::mt19937_64 rng{7};
  std::exponential_distribution<double> run{20.0};
};

Config Candidates(const std::string& extra = "") {
  auto cfg = Config::Parse(
      "[policies]\nchain = \"default\"\n[policies.selector]\ncandidates = \"none,clone\"\n" + extra, "live.toml");
  REQUIRE(cfg.ok());
  return std::move(cfg).value();
}

// Every candidate's scores: `clone` (any but `none`) cuts none's p99 in half.
std::vector<ReplayScore> CloneHalves(const std::vector<std::string>& candidates) {
  std::vector<ReplayScore> out;
  for (const std::string& c : candidates) {
    ReplayScore s;
    s.candidate = c;
    s.ran = true;
    s.p50 = c == "none" ? 0.035 : 0.017;
    s.p99 = c == "none" ? 0.23 : 0.12;
    out.push_back(s);
  }
  return out;
}

// An engine that holds its replay until the test lets it go, then says
// `clone` cuts none's p99 in half.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, open = false;
  bool Entered() {
    std::lock_guard<std::mutex> l(mu);
    return entered;
  }
};
class HeldEngine final : public ReplayEngine {
 public:
  explicit HeldEngine(std::shared_ptr<Gate> g) : g_(std::move(g)) {}
  bool Start(const ReplayModel&, const std::vector<std::string>& candidates) override {
    std::unique_lock<std::mutex> l(g_->mu);
    g_->entered = true;
    g_->cv.notify_all();
    g_->cv.wait(l, [&] { return g_->open; });
    scores_ = CloneHalves(candidates);
    return true;
  }
  bool Poll(std::vector<ReplayScore>* out) override {
    *out = std::move(scores_);
    return true;
  }

 private:
  std::shared_ptr<Gate> g_;
  std::vector<ReplayScore> scores_;
};

}  // namespace

TEST_CASE("selector live: the loop goes on while a replay runs, and the verdict lands after", "[sim][selector]") {
  SetLogLevel(LogLevel::kWarn);
  auto gate = std::make_shared<Gate>();
  ReplayThreadOptions to;
  to.max_queued = 1;
  PolicyServices services =
      ThreadedReplayServices([gate] { return std::unique_ptr<ReplayEngine>(std::make_unique<HeldEngine>(gate)); }, to);
  Config cfg = Candidates();
  auto chain = MakePolicyChain("default", cfg, services);
  REQUIRE(chain.ok());
  Loop loop(std::move(chain).value());
  REQUIRE(loop.selector->candidates() == std::vector<std::string>{"none", "clone"});
  int jobs = 0;
  while (!gate->Entered() && jobs < 100) {  // the first replay starts after 12 jobs
    CHECK(loop.Job() == 1);
    jobs++;
  }
  {
    std::unique_lock<std::mutex> l(gate->mu);
    REQUIRE(gate->cv.wait_for(l, std::chrono::seconds(30), [&] { return gate->entered; }));
  }
  CHECK(jobs >= 12);
  // The replay is held on its thread: the loop runs 200 more jobs meanwhile,
  // still under `none` (no verdict yet).
  for (int i = 0; i < 200; ++i) CHECK(loop.Job() == 1);
  CHECK(loop.selector->replays() == 0);
  CHECK(loop.selector->Choice("sleep") == "none");
  {
    std::lock_guard<std::mutex> l(gate->mu);
    gate->open = true;
  }
  gate->cv.notify_all();
  // The verdict lands at a later tick or commit: the class clones.
  size_t launched = 0;
  for (int i = 0; i < 2000 && loop.selector->replays() == 0; ++i) {
    launched = loop.Job();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(loop.selector->replays() >= 1);
  CHECK(loop.selector->Choice("sleep") == "clone");
  CHECK(loop.Job() == 2);  // the next job runs a clone beside its task
  (void)launched;
}

TEST_CASE("selector live: the daemon's chain replays in the simulator and switches a class", "[sim][selector]") {
  SetLogLevel(LogLevel::kWarn);
  ServerOptions o;
  auto chain = LoadDaemonConfig(Candidates(), &o);
  INFO(chain.status().message());
  REQUIRE(chain.ok());
  Loop loop(std::move(chain).value());
  REQUIRE(loop.selector->candidates() == std::vector<std::string>{"none", "clone"});  // an engine: all kept
  CHECK(loop.Job() == 1);
  CHECK(loop.selector->Choice("sleep") == "none");
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (loop.selector->Choice("sleep") != "clone" && std::chrono::steady_clock::now() < until) {
    loop.Job();
    if (loop.selector->replays() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  INFO("replays " << loop.selector->replays());
  CHECK(loop.selector->Choice("sleep") == "clone");
  CHECK(loop.Job() == 2);
}

TEST_CASE("selector live: replay = false keeps the first candidate, no thread", "[sim][selector]") {
  ServerOptions o;
  auto chain = LoadDaemonConfig(Candidates("replay = false\n"), &o);
  REQUIRE(chain.ok());
  Loop loop(std::move(chain).value());
  CHECK(loop.selector->candidates() == std::vector<std::string>{"none"});
  for (int i = 0; i < 40; ++i) CHECK(loop.Job() == 1);
  CHECK(loop.selector->replays() == 0);
  auto bad = Config::Parse("[policies.selector]\nreplay_nice = 30\n", "bad.toml");
  REQUIRE(bad.ok());
  auto refused = LoadDaemonConfig(*bad, &o);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("replay_nice") != std::string::npos);
}

TEST_CASE("selector live: the replay thread runs one replay at a time, a bounded queue, Poll never waits",
          "[sim][selector]") {
  auto gate = std::make_shared<Gate>();
  ReplayThreadOptions to;
  to.max_queued = 1;
  auto thread =
      ReplayThread::Create([gate] { return std::unique_ptr<ReplayEngine>(std::make_unique<HeldEngine>(gate)); }, to);
  auto a = thread->NewEngine(), b = thread->NewEngine(), c = thread->NewEngine();
  ReplayModel m;
  m.times = {1};
  const std::vector<std::string> cands{"none", "clone"};
  REQUIRE(a->Start(m, cands));
  CHECK_FALSE(a->Start(m, cands));  // one per engine
  {
    std::unique_lock<std::mutex> l(gate->mu);
    REQUIRE(gate->cv.wait_for(l, std::chrono::seconds(30), [&] { return gate->entered; }));
  }
  CHECK(b->Start(m, cands));        // queued behind a's
  CHECK_FALSE(c->Start(m, cands));  // the queue is full
  CHECK(thread->pending() == 2);
  std::vector<ReplayScore> s;
  CHECK_FALSE(a->Poll(&s));  // held: not yet, and no wait
  {
    std::lock_guard<std::mutex> l(gate->mu);
    gate->open = true;
  }
  gate->cv.notify_all();
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (thread->finished() < 2 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(a->Poll(&s));
  CHECK(s.size() == 2);
  CHECK_FALSE(a->Poll(&s));  // once
  REQUIRE(b->Poll(&s));
  CHECK(c->Start(m, cands));  // room again
}

// A clone races its task's first attempt from the start, so which of them
// loses says nothing about how long the first would have run: the first
// attempts that lost are learned as cut short at the winner's time and
// imputed above it (docs/POLICIES.md, "It learns each class"). Before,
// only the first attempts that won were learned, and the class's law was
// the faster of two draws: here half the mean.
TEST_CASE("selector: a clone race's loser is learned, cut short, and imputed above its cut", "[sim][selector]") {
  SetLogLevel(LogLevel::kWarn);
  class Keep final : public ReplayEngine {  // the first candidate (clone) wins every replay
   public:
    bool Start(const ReplayModel&, const std::vector<std::string>& candidates) override {
      scores_ = CloneHalves(candidates);
      return true;
    }
    bool Poll(std::vector<ReplayScore>* out) override {
      *out = std::exchange(scores_, {});
      return !out->empty();
    }

   private:
    std::vector<ReplayScore> scores_;
  };
  PolicyServices services;
  services.replay = [] { return std::unique_ptr<ReplayEngine>(std::make_unique<Keep>()); };
  auto cfg = Config::Parse("[policies]\nchain = \"default\"\n[policies.selector]\ncandidates = \"clone,none\"\n", "c");
  REQUIRE(cfg.ok());
  auto chain = MakePolicyChain("default", *cfg, services);
  REQUIRE(chain.ok());
  Loop loop(std::move(chain).value());
  for (int i = 0; i < 200; ++i) REQUIRE(loop.Job() == 2);  // every job clones
  CHECK(loop.selector->Choice("sleep") == "clone");
  const ReplayModel* m = loop.selector->LastModel("sleep");
  REQUIRE(m);
  REQUIRE(m->times.size() >= 150);  // the first attempts that won and those that lost (192 jobs at the last replay)
  double mean = 0;
  for (double t : m->times) mean += t / m->times.size();
  INFO("mean " << mean << " of " << m->times.size() << ", max " << *std::max_element(m->times.begin(), m->times.end()));
  CHECK(mean > 0.04);   // an attempt's law: mean 50 ms (the winners alone: 25 ms)
  CHECK(mean < 0.075);  // the slowest cut, with no time above it, at the predictor's total
}

// A cancelled job leaves the selector's books (OnJobEnded): a class that
// runs one job at a time stays closed after one is cancelled. Before, the
// cancelled job stayed live in them for good, the next job made two, and
// the class was replayed as open.
TEST_CASE("selector: a cancelled job in a one-at-a-time class leaves it closed", "[sim][selector]") {
  SetLogLevel(LogLevel::kWarn);
  class Refuse final : public ReplayEngine {  // models are built (LastModel), never run
   public:
    bool Start(const ReplayModel&, const std::vector<std::string>&) override { return false; }
    bool Poll(std::vector<ReplayScore>*) override { return false; }
  };
  PolicyServices services;
  services.replay = [] { return std::unique_ptr<ReplayEngine>(std::make_unique<Refuse>()); };
  auto chain = MakePolicyChain("default", Candidates(), services);
  REQUIRE(chain.ok());
  Loop loop(std::move(chain).value());
  for (int i = 0; i < 10; ++i) loop.Job();
  JobDef d;
  d.name = "cancelled";
  d.templ.kernel = "sleep";
  d.template_count = 1;
  auto id = loop.core->SubmitJob(d);
  REQUIRE(id.ok());
  std::vector<Command> cmds;
  loop.core->TakeCommands(&cmds);
  REQUIRE(loop.core->CancelJob(*id).ok());
  loop.core->TakeCommands(&cmds);
  loop.clock.Advance(0.001);
  loop.core->Tick();
  loop.core->TakeCommands(&cmds);
  for (int i = 0; i < 10; ++i) loop.Job();
  const ReplayModel* m = loop.selector->LastModel("sleep");
  REQUIRE(m);
  CHECK(m->closed);
}
