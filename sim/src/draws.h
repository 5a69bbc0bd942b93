// The simulator's workload and cluster draws, shared by the simulator and
// the clairvoyant bound (clairvoyant.cpp) so that both see the same jobs,
// task sizes and executor speeds for a seed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tailcut/common/random.h"
#include "tailcut/sim/scenario.h"

namespace tailcut::sim::draws {

inline Rng WorkloadRng(uint64_t seed) { return Rng(Mix(seed ^ 0x1111)); }
inline Rng NetworkRng(uint64_t seed) { return Rng(Mix(seed ^ 0x2222)); }
inline Rng ClusterRng(uint64_t seed) { return Rng(Mix(seed ^ 0x3333)); }

// Per-executor run-time multipliers, drawn once, in executor order.
inline std::vector<double> Speeds(const ClusterModel& cl, uint64_t seed) {
  Rng rng = ClusterRng(seed);
  std::vector<double> v(cl.executors);
  for (double& s : v) s = cl.speed.Sample(rng);
  return v;
}

// A job's class (by weight) and fan-out, in this order from the workload
// stream; Poisson arrivals then draw the gap to the next job from it too.
struct JobDraw {
  uint32_t cls = 0;
  uint32_t tasks = 1;
};
inline JobDraw DrawJob(const WorkloadModel& w, double total_weight, Rng& rng) {
  JobDraw d;
  double u = rng.Uniform() * total_weight;
  while (d.cls + 1 < w.classes.size() && u >= w.classes[d.cls].weight) u -= w.classes[d.cls++].weight;
  double n_real = w.classes[d.cls].tasks.Sample(rng);
  d.tasks = static_cast<uint32_t>(std::max(1.0, std::min(1e6, std::round(n_real))));
  return d;
}

// Bits of the n-th attempt of (job, task): counter-based, so a draw does not
// depend on what else a policy launched.
inline uint64_t TaskBits(uint64_t seed, uint64_t job, uint32_t task, uint32_t n) {
  return Mix(seed ^ Mix(job * 0x9e3779b97f4a7c15ULL ^ Mix(task + (uint64_t{n} << 32))));
}

}  // namespace tailcut::sim::draws
