// Property: whatever the events, with every built-in policy plus a greedy
// one in the chain, the redundancy budget holds, every task commits at
// most once (exactly once in each succeeded all-tasks job), and a task that
// is not idempotent never has two live attempts.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <set>

#include "../core/core_harness.h"
#include "tailcut/policies/registry.h"

using namespace tailcut;
using tailcut::testing::CoreHarness;

namespace {

// Proposes a copy of everything, every tick, and quarantines freely.
struct Greedy : MitigationPolicy {
  std::mt19937* rng;
  explicit Greedy(std::mt19937* r) : rng(r) {}
  std::string_view name() const override { return "greedy"; }
  void OnJobSubmitted(const ClusterView&, JobId j, std::vector<Proposal>* out) override {
    out->push_back(Proposal::CloneAtLaunch(j, 8, "greedy"));
  }
  void OnTick(const ClusterView& v, std::vector<Proposal>* out) override {
    v.ForEachRunningAttempt([&](const AttemptView& a) {
      out->push_back(Proposal::LaunchCopy(a.job, a.task, "greedy"));
      out->push_back(Proposal::LaunchCopy(a.job, a.task, "greedy", a.executor));
    });
    v.ForEachRunningAttempt([&](const AttemptView& a) {  // kill and restart, now and then
      if ((*rng)() % 8 == 0) out->push_back(Proposal::CancelAttempt(a.attempt, "greedy"));
    });
    v.ForEachExecutor([&](const ExecutorView& e) {
      uint32_t r = (*rng)() % 20;
      if (r == 0) out->push_back(Proposal::Quarantine(e.id, "greedy"));
      if (r == 1) out->push_back(Proposal::Release(e.id, "greedy"));
    });
  }
};

}  // namespace

TEST_CASE("random event sequences: budget never exceeded, each task committed once, side effects run alone") {
  size_t total_copies = 0, total_commits = 0, side_effect_launches = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    INFO("seed " << seed);
    std::mt19937 rng(seed);
    auto chain = MakePolicyChain("clone,spark,late,hedge,reassign,predictive,coded,gradient_code,quorum", Config());
    REQUIRE(chain.ok());
    PolicyChain c = std::move(chain).value();
    if (seed % 2) c.push_back(std::make_unique<Greedy>(&rng));
    CoreOptions o;
    o.lost_after_s = 0;
    o.redundancy_budget = (seed % 4) * 0.1;
    o.min_copies = seed % 3;
    CoreHarness h(o, std::move(c));
    std::map<ExecutorId, uint32_t> slots;
    std::map<JobId, CompletionKind> kinds;
    std::map<JobId, uint32_t> task_count;
    std::map<JobId, bool> side_effects;
    auto cap = [&] {
      uint32_t total = 0;
      for (auto& [e, s] : slots) total += s;
      return std::max<uint32_t>(o.min_copies, static_cast<uint32_t>(std::floor(o.redundancy_budget * total)));
    };
    auto extras = [&] {
      std::map<std::pair<JobId, TaskIndex>, uint32_t> per;
      for (auto& [a, l] : h.live) per[{l.job, l.task}]++;
      uint32_t n = 0;
      for (auto& [k, c] : per) n += c - 1;
      return n;
    };
    auto pick_live = [&]() -> AttemptId {
      if (h.live.empty()) return 0;
      auto it = h.live.begin();
      std::advance(it, rng() % h.live.size());
      return it->first;
    };
    uint32_t prev_extras = 0;
    auto step = [&](int kind) {
      size_t launches_before = h.launches.size();
      switch (kind) {
        case 0: {  // submit
          JobDef j = CoreHarness::Fanout(1 + rng() % 15);
          uint32_t n = j.TaskCount();
          uint32_t r = rng() % 3;
          if (r == 1) {
            j.rule.kind = CompletionKind::kKOfN;
            j.rule.k = 1 + rng() % n;
            j.templ.kernel = rng() % 2 ? "coded_matmul" : "gradient_worker";
          } else if (r == 2) {
            j.rule.kind = CompletionKind::kQuorum;
            j.rule.k = 1 + rng() % n;
            j.rule.min_count = rng() % (j.rule.k + 1);
            // Always a deadline: without one, a quorum job whose missing
            // tasks all died waits forever (core behaviour, reported).
            j.rule.deadline_s = 1.0 + rng() % 5;
          }
          j.max_attempts = 1 + rng() % 3;
          // A shell job: not idempotent unless the job says so (either way).
          if (uint32_t side = rng() % 4; side < 2) {
            j.templ.kernel = "shell";
            if (side == 1) j.idempotent = rng() % 2 == 0;
          }
          auto id = h.core.SubmitJob(j);
          if (id.ok()) {
            kinds[*id] = j.rule.kind;
            task_count[*id] = n;
            side_effects[*id] = j.templ.kernel == "shell" && !j.idempotent.value_or(false);
          }
          break;
        }
        case 1: {  // add executor
          uint32_t s = 1 + rng() % 4;
          std::vector<std::string> kernels = testing::kTestKernels;
          kernels.push_back("shell");  // declared not idempotent, as the executor daemon does
          ExecutorId e = h.Exec(s, 0, kernels);
          slots[e] = s;
          break;
        }
        case 2: {  // lose executor
          if (slots.size() <= 1) break;
          auto it = slots.begin();
          std::advance(it, rng() % slots.size());
          ExecutorId e = it->first;
          slots.erase(it);
          for (AttemptId a : h.LiveOn(e)) h.live.erase(a);
          h.core.RemoveExecutor(e, rng() % 2, "test");
          break;
        }
        case 3:
        case 4:
        case 5: {  // success
          if (AttemptId a = pick_live()) {
            h.live.erase(a);
            h.core.AttemptSucceeded(a, "", 0.1 + (rng() % 100) / 20.0);
          }
          break;
        }
        case 6: {  // failure
          if (AttemptId a = pick_live()) {
            h.live.erase(a);
            h.core.AttemptFailed(a, "boom", 0.5);
          }
          break;
        }
        default: {  // time passes
          h.clock.Advance((rng() % 20) / 10.0);
          if (rng() % 3 == 0)
            for (auto& [a, l] : h.live) h.core.AttemptStarted(a);
          h.core.Tick();
          break;
        }
      }
      h.Drain();
      bool copied = false;
      for (size_t i = launches_before; i < h.launches.size(); ++i) copied |= h.launches[i].copy;
      std::map<std::pair<JobId, TaskIndex>, uint32_t> lives;
      for (auto& [a, l] : h.live) {
        REQUIRE(l.idempotent == !side_effects[l.job]);
        if (!l.idempotent) REQUIRE(++lives[{l.job, l.task}] == 1);
      }
      for (size_t i = launches_before; i < h.launches.size(); ++i) side_effect_launches += !h.launches[i].idempotent;
      uint32_t now_extras = extras();
      if (copied) REQUIRE(now_extras <= cap());
      REQUIRE(now_extras <= std::max(cap(), prev_extras));
      prev_extras = now_extras;
    };
    for (int i = 0; i < 2; ++i) step(1);
    for (int i = 0; i < 600; ++i) step(static_cast<int>(rng() % 10));
    // Wind down: keep an executor, finish everything.
    if (slots.empty()) step(1);
    for (int i = 0; i < 5000 && h.core.RunningJobs() > 0; ++i) step(i % 2 ? 3 : 7);
    CHECK(h.core.RunningJobs() == 0);
    if (h.core.RunningJobs() > 0) {
      for (auto& [id, k] : kinds) {
        auto st = h.core.JobStatus(id);
        if (st.ok() && st->state == JobState::kRunning)
          WARN("job " << id << " kind " << int(k) << " tasks " << st->tasks << " committed " << st->committed
                      << " running " << st->running << " live(h) " << h.live.size() << " core live "
                      << h.core.LiveAttempts());
      }
      for (auto& e : h.core.Executors()) WARN("exec " << e.id << " q " << e.quarantined << " running " << e.running);
    }

    for (auto& l : h.launches) total_copies += l.copy;
    std::map<std::pair<JobId, TaskIndex>, int> commits;
    for (auto& r : h.recorder.records)
      if (r.outcome == AttemptOutcome::kCommitted) {
        REQUIRE(++commits[{r.job, r.task}] == 1);
        ++total_commits;
      }
    for (auto& f : h.recorder.finished) {
      if (f.state != JobState::kSucceeded || kinds[f.id] != CompletionKind::kAll) continue;
      for (TaskIndex t = 0; t < task_count[f.id]; ++t) CHECK(commits[{f.id, t}] == 1);
    }
  }
  // The sequences did exercise redundancy.
  CHECK(total_copies > 100);
  CHECK(total_commits > 1000);
  CHECK(side_effect_launches > 100);
}
