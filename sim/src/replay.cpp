#include "tailcut/sim/replay.h"

#include <algorithm>
#include <sstream>

#include "tailcut/common/random.h"
#include "tailcut/common/stats.h"
#include "tailcut/policies/replay_thread.h"
#include "tailcut/policies/selector.h"
#include "tailcut/sim/simulator.h"

namespace tailcut::sim {
namespace {
constexpr const char* kReplayed = "replayed";  // the replayed class's owner beside other classes
}  // namespace

StatusOr<Scenario> ReplayScenario(const ReplayModel& m, const Config& policies) {
  if (m.times.empty()) return Status::InvalidArgument("replay: no run times");
  std::ostringstream t;
  t.precision(17);
  t << "name = \"replay-" << m.task_class << "\"\nseed = " << (m.seed % (1ULL << 53))
    << "\n\n[cluster]\nexecutors = " << m.executors << "\nslots = " << m.slots
    << "\nnetwork = { dist = \"constant\", value = " << m.network_s << " }\n";
  for (uint32_t e = 0; e < m.executor_factors.size(); ++e)
    if (m.executor_factors[e] > 1)
      t << "\n[[cluster.fail_slow]]\nexecutor = " << e << "\nat_s = 0\nfactor = " << m.executor_factors[e] << "\n";
  t << "\n[workload]\n";
  if (m.closed || m.job_rate <= 0)
    t << "arrival = \"closed\"\noutstanding = 1\n";
  else
    t << "arrival = \"poisson\"\nrate = " << m.job_rate << "\n";
  if (!m.others.empty()) t << "owner = \"" << kReplayed << "\"\n";
  t << "jobs = " << m.jobs << "\n\n[[workload.class]]\nname = \"" << m.task_class << "\"\ntasks = " << m.tasks
    << "\ntask_time = 1\n";
  if (m.needed > 0 && m.needed < m.tasks) t << "rule = \"k_of_n\"\nk = " << m.needed << "\n";
  // The other classes: as many jobs as arrive while the replayed class's
  // do (open against open), else as many as it has; each at most 4x its
  // tasks, so a replay costs at most (1 + 4 x kMaxOthers) x its own (a
  // class of huge jobs becomes one job of that many tasks: a backlog).
  const double span = m.closed || m.job_rate <= 0 ? 0 : m.jobs / m.job_rate;
  const uint64_t cap = 4ull * m.jobs * std::max(m.tasks, 1u);
  for (size_t i = 0; i < m.others.size(); ++i) {
    const ReplayLoad& o = m.others[i];
    const uint32_t tasks = static_cast<uint32_t>(std::min<uint64_t>(std::max(o.tasks, 1u), cap));
    t << "\n[[workload.class]]\nname = \"other-" << i << "\"\nweight = 0\ntasks = " << tasks << "\ntask_time = 1\n";
    if (o.needed > 0 && o.needed < tasks) t << "rule = \"k_of_n\"\nk = " << o.needed << "\n";
    const bool closed = o.closed || o.job_rate <= 0;
    const uint64_t jobs = std::clamp<uint64_t>(closed || span <= 0 ? m.jobs : std::llround(o.job_rate * span), 1,
                                               std::max<uint64_t>(cap / tasks, 1));
    t << "\n[[workload.stream]]\nowner = \"others\"\nclass = \"other-" << i << "\"\njobs = " << jobs << "\n";
    if (closed)
      t << "arrival = \"closed\"\noutstanding = 1\n";
    else
      t << "arrival = \"poisson\"\nrate = " << o.job_rate << "\n";
  }
  auto cfg = Config::Parse(t.str(), "replay");
  if (!cfg.ok()) return cfg.status();
  auto sc = ParseScenario(std::move(cfg).value(), ".");
  if (!sc.ok()) return sc.status();
  auto empirical = [&](Distribution& d, const std::vector<double>& times, double task_share) {
    auto values = std::make_shared<std::vector<double>>(times);
    std::sort(values->begin(), values->end());
    d = Distribution();
    d.kind = Distribution::Kind::kEmpirical;
    d.values = std::move(values);
    d.task_share = task_share;
  };
  empirical(sc->workload.classes.front().task_time, m.times, m.task_share);
  for (size_t i = 0; i < m.others.size(); ++i)
    if (!m.others[i].times.empty()) empirical(sc->workload.classes[i + 1].task_time, m.others[i].times, 0);
  sc->config = policies;  // the candidates' [policies.*] (and [owners]: single-tenant ones are refused)
  return sc;
}

bool SimReplayEngine::Start(const ReplayModel& m, const std::vector<std::string>& candidates) {
  if (ready_) return false;
  done_.assign(candidates.size(), ReplayScore());
  for (size_t i = 0; i < candidates.size(); ++i) {
    done_[i].candidate = candidates[i];
    done_[i].ran = true;
  }
  // Paired: every candidate on the same seeds' workloads.
  const uint32_t seeds = std::max(m.seeds, 1u);
  for (uint32_t k = 0; k < seeds; ++k) {
    ReplayModel mk = m;
    if (k > 0) mk.seed = Mix(m.seed + k);
    auto sc = ReplayScenario(mk, policies_);
    for (ReplayScore& s : done_) {
      if (!s.ran) continue;
      auto r = sc.ok() ? RunPolicy(*sc, s.candidate, sc->seed) : StatusOr<SimResult>(sc.status());
      if (!r.ok() || r->unfinished > 0) {
        s.ran = false;
        continue;
      }
      double p50 = r->p50, p99 = r->p99, p999 = r->p999;
      for (const OwnerResult& o : r->owners)  // beside other classes: only its own jobs
        if (o.owner == kReplayed && !o.latencies.empty()) {
          p50 = o.p50;
          p99 = o.p99;
          p999 = Quantile(o.latencies, 0.999);
        }
      s.p50s.push_back(p50);
      s.p99s.push_back(p99);
      s.p50 += p50 / seeds;
      s.p99 += p99 / seeds;
      s.p999 += p999 / seeds;
      s.extra_work += r->extra_work / seeds;
    }
  }
  for (ReplayScore& s : done_)
    if (!s.ran) {
      std::string c = std::move(s.candidate);
      s = ReplayScore();
      s.candidate = std::move(c);
    }
  ready_ = true;
  return true;
}

bool SimReplayEngine::Poll(std::vector<ReplayScore>* out) {
  if (!ready_) return false;
  *out = std::move(done_);
  done_.clear();
  ready_ = false;
  return true;
}

PolicyServices SimPolicyServices(const Config& policies) {
  PolicyServices s;
  s.replay = [policies] { return std::unique_ptr<ReplayEngine>(std::make_unique<SimReplayEngine>(policies)); };
  return s;
}

PolicyServices LivePolicyServices(const Config& policies) {
  SelectorOptions o;
  if (!LoadSelectorOptions(policies, "policies.selector.", &o).ok() || !o.replay) return {};
  ReplayThreadOptions t;
  t.max_queued = o.replay_queue;
  t.nice = static_cast<int>(o.replay_nice);
  return ThreadedReplayServices(
      [policies] { return std::unique_ptr<ReplayEngine>(std::make_unique<SimReplayEngine>(policies)); }, t);
}

}  // namespace tailcut::sim
