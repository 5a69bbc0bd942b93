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
  // Do no harm: an attempt a fresh run is not expected to beat is left alone.
  if (f.time_left < o.copy_ratio * f.fresh) return Mitigation::kWait;
  // Mantri: the remaining time is likely beyond restart_ratio fresh runs.
  bool hopeless = f.time_left >= o.restart_ratio * f.fresh && f.p_straggler >= o.restart_p;
  if (o.restart && hopeless) return Mitigation::kRestart;
  // Otherwise the original may still win: a copy races it when a slot is
  // free; with none, a likely (not hopeless) straggler waits for one.
  // Restarting it instead was measured worse (docs/POLICIES.md).
  return f.slot_free ? Mitigation::kCopy : Mitigation::kWait;
}

}  // namespace tailcut::policy_util
