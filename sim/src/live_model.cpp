// The [live] section as a simulation scenario (`tailcut sim --live-model`).
#include <algorithm>
#include <cmath>

#include "tailcut/sim/scenario.h"

namespace tailcut::sim {

double LiveMeanTaskS(const LiveModel& l) {
  double base = l.kernel == "noop" ? 0.0 : l.task_ms / 1000.0;
  if (l.kernel == "sleep") base *= std::exp(l.sigma * l.sigma / 2);  // lognormal mean
  return base + l.delay_prob * l.delay_ms / 1000.0;
}

double LiveRate(const LiveModel& l) {
  if (l.rate > 0) return l.rate;
  double job_s = std::max(1e-4, LiveMeanTaskS(l)) * l.tasks_per_job;
  return 0.5 * l.executors * l.slots / job_s;
}

std::vector<double> LiveArrivals(const LiveModel& l, uint64_t seed, uint32_t jobs) {
  Rng rng(Mix(seed ^ 0x6c697665ULL));
  const double rate = LiveRate(l);
  std::vector<double> at(jobs, 0.0);
  for (uint32_t j = 1; j < jobs; ++j) at[j] = at[j - 1] + rng.Exp(1.0 / rate);
  return at;
}

Scenario LiveAsSimScenario(const Scenario& in) {
  Scenario sc = in;
  const LiveModel& l = in.live;
  sc.name = (in.name.empty() ? std::string("scenario") : in.name) + "-live-model";
  ClusterModel& c = sc.cluster;
  c = ClusterModel{};
  c.executors = l.executors;
  c.slots = l.slots;
  c.speed = Distribution::Constant(1);
  c.network = Distribution::Constant(l.network_ms / 1000.0);
  if (l.fail_slow_executor >= 0)
    c.fail_slow.push_back({static_cast<uint32_t>(l.fail_slow_executor), l.fail_slow_at_s, l.fail_slow_factor, 0});
  if (l.crash_executor >= 0)
    c.crashes.push_back({static_cast<uint32_t>(l.crash_executor), l.crash_at_s, l.lost_after_s});
  // Live progress: the sleep kernel reports it in steps only for tasks over
  // 0.2 s, and executors send it with heartbeats (every 200 ms by default).
  c.progress_reports = l.kernel == "sleep" && l.task_ms > 200 ? static_cast<uint32_t>(std::min(20.0, l.task_ms / 200)) : 0;
  sc.core.lost_after_s = 0;  // crashes are detected after detect_s
  sc.core.count_executor_loss = false;
  sc.core.attempt_timeout_ratio = 0;  // modelled executors always answer
  sc.heartbeats = false;
  WorkloadModel& w = sc.workload;
  w = WorkloadModel{};
  w.arrival = l.arrival == "closed" ? WorkloadModel::Arrival::kClosed : WorkloadModel::Arrival::kPoisson;
  w.rate = LiveRate(l);
  w.outstanding = l.outstanding;
  w.jobs = l.jobs;
  JobClass jc;
  jc.name = "live";
  jc.tasks = Distribution::Constant(l.tasks_per_job);
  jc.tasks_set = true;
  Distribution t;
  if (l.kernel == "noop") {
    t = Distribution::Constant(0);
  } else if (l.kernel == "sleep" && l.sigma > 0) {
    t.kind = Distribution::Kind::kLognormal;
    t.median = l.task_ms / 1000.0;
    t.sigma = l.sigma;
  } else {
    t = Distribution::Constant(l.task_ms / 1000.0);
  }
  if (l.delay_prob > 0 && l.delay_ms > 0 && l.task_ms > 0) {
    t.straggler_p = l.delay_prob;
    t.straggler_factor = 1 + l.delay_ms / l.task_ms;
  }
  jc.task_time = t;
  w.classes = {jc};
  sc.trace.clear();
  return sc;
}

}  // namespace tailcut::sim
