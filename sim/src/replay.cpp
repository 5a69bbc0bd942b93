#include "tailcut/sim/replay.h"

#include <algorithm>
#include <sstream>

#include "tailcut/sim/simulator.h"

namespace tailcut::sim {

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
  t << "jobs = " << m.jobs << "\n\n[[workload.class]]\nname = \"" << m.task_class << "\"\ntasks = " << m.tasks
    << "\ntask_time = 1\n";
  if (m.needed > 0 && m.needed < m.tasks) t << "rule = \"k_of_n\"\nk = " << m.needed << "\n";
  auto cfg = Config::Parse(t.str(), "replay");
  if (!cfg.ok()) return cfg.status();
  auto sc = ParseScenario(std::move(cfg).value(), ".");
  if (!sc.ok()) return sc.status();
  auto values = std::make_shared<std::vector<double>>(m.times);
  std::sort(values->begin(), values->end());
  Distribution& d = sc->workload.classes.front().task_time;
  d = Distribution();
  d.kind = Distribution::Kind::kEmpirical;
  d.values = std::move(values);
  d.task_share = m.task_share;
  sc->config = policies;  // the candidates' [policies.*] (and [owners]: single-tenant ones are refused)
  return sc;
}

bool SimReplayEngine::Start(const ReplayModel& m, const std::vector<std::string>& candidates) {
  if (ready_) return false;
  done_.clear();
  auto sc = ReplayScenario(m, policies_);
  for (const std::string& c : candidates) {
    ReplayScore s;
    s.candidate = c;
    if (sc.ok()) {
      auto r = RunPolicy(*sc, c, sc->seed);
      if (r.ok() && r->unfinished == 0) {
        s.ran = true;
        s.p50 = r->p50;
        s.p99 = r->p99;
        s.p999 = r->p999;
        s.extra_work = r->extra_work;
      }
    }
    done_.push_back(std::move(s));
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

}  // namespace tailcut::sim
