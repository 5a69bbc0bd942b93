#include "mitigation_cost.h"

#include <cmath>

namespace tailcut::policy_util {

const char* MitigationName(Mitigation m) {
  switch (m) {
    case Mitigation::kWait: return "wait";
    case Mitigation::kCopy: return "copy";
    case Mitigation::kRestart: return "restart";
  }
  return "wait";
}

Mitigation ChooseMitigation(const LagFacts& f, const MitigationCostOptions& o) {
  // Numbers come from predictors fed by executors: NaN or nonsense waits.
  if (!(f.p_straggler >= o.act_p) || !(f.fresh > 0) || !std::isfinite(f.fresh) || !std::isfinite(f.time_left))
    return Mitigation::kWait;
  bool far_behind = f.time_left >= o.restart_ratio * f.fresh;
  if (o.restart && far_behind && f.p_straggler >= o.restart_p) return Mitigation::kRestart;
  if (f.slot_free) return Mitigation::kCopy;
  return o.restart && far_behind ? Mitigation::kRestart : Mitigation::kWait;
}

}  // namespace tailcut::policy_util
