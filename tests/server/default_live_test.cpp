// `default` in the daemon (issue 39; docs/POLICIES.md, "Live."): the
// scheduler over loopback sockets (server_fixture.h) runs the selector; a
// scripted executor reports the run times, so what each class learns is the
// test's; the replay engine is injected and synchronous, so each replay's
// verdict lands at the commit that started it, and the switch is at a
// known job. tests/sim/live_replay_test.cpp covers the simulator's engine
// on its own thread.
#include <algorithm>
#include <map>
#include <mutex>

#include "server_fixture.h"
#include "tailcut/policies/registry.h"
#include "tailcut/policies/selector.h"

using namespace tailcut;
using namespace tailcut::server_test;

namespace {

// The models replayed, read by the test thread while the server's runs.
struct Replayed {
  std::mutex mu;
  std::vector<ReplayModel> models;
  size_t Count() {
    std::lock_guard<std::mutex> l(mu);
    return models.size();
  }
  ReplayModel Last() {
    std::lock_guard<std::mutex> l(mu);
    return models.back();
  }
};

double Quantile(std::vector<double> x, double q) {
  std::sort(x.begin(), x.end());
  return x[std::min(x.size() - 1, static_cast<size_t>(q * x.size()))];
}

// A replay in closed form over the learned run times: `none` runs each
// task once (the times as learned); `clone` runs two attempts and keeps
// the first to finish (each time against the next one: attempts drawn
// independently). No other candidate is expected.
class PairEngine final : public ReplayEngine {
 public:
  explicit PairEngine(std::shared_ptr<Replayed> r) : r_(std::move(r)) {}
  bool Start(const ReplayModel& m, const std::vector<std::string>& candidates) override {
    {
      std::lock_guard<std::mutex> l(r_->mu);
      r_->models.push_back(m);
    }
    scores_.clear();
    for (const std::string& c : candidates) {
      std::vector<double> t = m.times;
      if (c == "clone")
        for (size_t i = 0; i < t.size(); ++i) t[i] = std::min(m.times[i], m.times[(i + 1) % t.size()]);
      ReplayScore s;
      s.candidate = c;
      s.ran = c == "none" || c == "clone";
      s.p50 = Quantile(t, 0.5);
      s.p99 = Quantile(t, 0.99);
      scores_.push_back(s);
    }
    return true;
  }
  bool Poll(std::vector<ReplayScore>* out) override {
    if (scores_.empty()) return false;
    *out = std::move(scores_);
    scores_.clear();
    return true;
  }

 private:
  std::shared_ptr<Replayed> r_;
  std::vector<ReplayScore> scores_;
};

PolicyChain SelectorChain(std::shared_ptr<Replayed> replayed) {
  PolicyServices services;
  services.replay = [replayed] { return std::unique_ptr<ReplayEngine>(std::make_unique<PairEngine>(replayed)); };
  auto cfg = Config::Parse("[policies.selector]\ncandidates = \"none,clone\"\n", "selector.toml");
  REQUIRE(cfg.ok());
  auto chain = MakePolicyChain("default", *cfg, services);
  REQUIRE(chain.ok());
  REQUIRE(chain->size() == 1);
  const auto* selector = dynamic_cast<const SelectorPolicy*>(chain->front().get());
  REQUIRE(selector);
  REQUIRE(selector->candidates() == std::vector<std::string>{"none", "clone"});
  return std::move(chain).value();
}

}  // namespace

TEST_CASE("server: default switches a class to the candidate its replays say wins, and only that class") {
  auto replayed = std::make_shared<Replayed>();
  RunningServer rs(TestOptions(0), SelectorChain(replayed));  // 0: never lost (b may idle past a heartbeat)
  zmq::context_t ctx;
  // Two one-slot executors: a clone runs on the other one.
  ScriptedExecutor a(ctx, rs.server->executor_endpoint()), b(ctx, rs.server->executor_endpoint());
  wire::SchedulerToExecutor msg;
  for (ScriptedExecutor* ex : {&a, &b}) {
    ex->Register(1);
    REQUIRE(ex->Next(&msg));
    REQUIRE(msg.has_registered());
  }
  Client client(rs.ClientOpts());

  // Every attempt either executor was given, by job: (first attempts, copies).
  std::map<uint64_t, std::pair<size_t, size_t>> given;
  std::map<uint64_t, std::pair<uint64_t, ScriptedExecutor*>> first;  // a job's first attempt, and where
  auto hear = [&](double seconds) {
    for (ScriptedExecutor* ex : {&a, &b}) {
      if (!ex->Next(&msg, seconds) || !msg.has_work()) continue;  // a clone's cancel: nothing to do
      for (const auto& w : msg.work().assign()) {
        auto& [firsts, copies] = given[w.job_id()];
        (w.copy() ? copies : firsts)++;
        if (!w.copy()) first[w.job_id()] = {w.attempt_id(), ex};
      }
    }
  };
  // One one-task job of `kernel` (its class), start to end: its first
  // attempt reports `run_s` once `attempts` were given (a clone is launched
  // with it, in the same dispatch); returns the attempts it was given.
  auto job = [&](const std::string& kernel, double run_s, size_t attempts) {
    auto id = client.Submit(FanoutJob(kernel, "", 1));
    REQUIRE(id.ok());
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    auto count = [&] { return given[*id].first + given[*id].second; };
    while ((!first.count(*id) || count() < attempts) && std::chrono::steady_clock::now() < until) hear(0.01);
    REQUIRE(first.count(*id));
    first[*id].second->Complete({first[*id].first}, run_s);
    auto st = client.Wait(*id);
    REQUIRE(st.ok());
    CHECK(st->state() == wire::JOB_SUCCEEDED);
    CHECK(given[*id].first == 1);
    return *id;
  };
  // The attempts each job was given, once what is still on the way came in.
  auto attempts = [&](const std::vector<uint64_t>& jobs) {
    for (int i = 0; i < 20; ++i) hear(0.01);
    std::vector<size_t> n;
    for (uint64_t j : jobs) n.push_back(given[j].first + given[j].second);
    return n;
  };

  // `noop`: every attempt 50 ms. Its first replay comes at its 12th
  // finished job (first_replay_jobs) and finds no gain: it keeps `none`.
  std::vector<uint64_t> alone;
  for (int i = 0; i < 11; ++i) alone.push_back(job("noop", 0.05, 1));
  CHECK(replayed->Count() == 0);
  alone.push_back(job("noop", 0.05, 1));
  REQUIRE(replayed->Count() == 1);
  CHECK(replayed->Last().task_class == "noop");
  CHECK(replayed->Last().times == std::vector<double>(12, 0.05));

  // `sleep`: one attempt in five takes 10x (the attempt's slowness: a clone
  // wins). The replay at its 12th job learned exactly the reported times and
  // says `clone` cuts the p99 tenfold: from the next job on, each runs a
  // clone beside its task; `noop`'s jobs still run alone.
  std::vector<double> reported;
  for (int i = 0; i < 12; ++i) {
    reported.push_back(i % 5 == 4 ? 0.5 : 0.05);
    alone.push_back(job("sleep", reported.back(), 1));
  }
  REQUIRE(replayed->Count() == 2);
  const ReplayModel sleep = replayed->Last();
  CHECK(sleep.task_class == "sleep");
  CHECK(sleep.times == reported);
  std::vector<uint64_t> cloned;
  for (int i = 0; i < 3; ++i) {
    cloned.push_back(job("sleep", 0.05, 2));
    alone.push_back(job("noop", 0.05, 1));
  }
  CHECK(attempts(alone) == std::vector<size_t>(alone.size(), 1));
  CHECK(attempts(cloned) == std::vector<size_t>(cloned.size(), 2));
  for (uint64_t j : cloned) CHECK(given[j].second == 1);  // the clone is a copy
  CHECK(replayed->Count() == 2);                          // the next replays at the doubling: 24 jobs
}
