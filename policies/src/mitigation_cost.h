// Acting by expected cost on a lagging attempt: wait, copy, or kill and
// restart. Self-contained (no view, no state), so a tick-driven or an
// event-driven policy, or the core's proposal handling, can all call it.
//
// The rule (docs/POLICIES.md, "Wait, copy or restart"):
// - not likely a straggler (p_straggler < act_p), or nothing known about a
//   fresh run: wait;
// - do no harm: a fresh run is not expected to end first (time_left <
//   copy_ratio x fresh; restart needs restart_ratio x): wait;
// - Mantri: the remaining time is likely far beyond a fresh run
//   (p_straggler >= restart_p and time_left >= restart_ratio x fresh):
//   restart. A copy would race an attempt that is nearly sure to lose while
//   holding its slot; for heavy tails relaunching beats cloning (Aktas &
//   Soljanin);
// - a slot is free now: copy (the original may still win);
// - no slot is free: wait for one (a copy is proposed when one frees). A
//   hopeless attempt was restarted above, on its own slot (the core
//   relaunches a task whose only attempt was cancelled at once, on the best
//   free slot: the one just freed when nothing is better). Restarting likely
//   but not hopeless stragglers too was measured worse in the simulator
//   (heavy_tail p99 9.0 vs 7.7 s, random_stragglers 11.2 vs 10.2 s).
#pragma once

namespace tailcut::policy_util {

enum class Mitigation { kWait, kCopy, kRestart };
const char* MitigationName(Mitigation m);  // "wait", "copy", "restart"

struct LagFacts {
  double p_straggler = 0;  // P(total run time > the straggler threshold)
  double time_left = 0;    // expected remaining seconds of the attempt
  double fresh = 0;        // median run time of a fresh attempt where it would run; <= 0 unknown
  bool slot_free = false;  // a copy could start now (a free slot and budget)
};

struct MitigationCostOptions {
  double act_p = 0.7;          // below: wait
  double restart_p = 0.9;      // Mantri: P(t_rem > restart_ratio x t_new) high ...
  double restart_ratio = 2.0;  // ... with this ratio
  // Do no harm: copy only when the expected time left is at least this x a
  // fresh run's (a copy that is not expected to finish first only adds work).
  double copy_ratio = 0.5;
  bool restart = true;  // false: never restart (copy or wait only)
};

Mitigation ChooseMitigation(const LagFacts& f, const MitigationCostOptions& o);

}  // namespace tailcut::policy_util
