// The proposal gate: policies only propose; this applies a Proposal if the
// cluster allows it. Copies need a free fitting executor and room in the
// redundancy budget, quarantine is capped by max_quarantined_share, and
// proposals about jobs, attempts or executors that are gone are ignored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core_state.h"
#include "lifecycle.h"
#include "placement.h"

namespace tailcut::core {

// How many of `fleet` executors may be quarantined at once: `share` of the
// fleet, at least one when there are three or more, never more than half.
size_t QuarantineCap(double share, size_t fleet);

class ProposalGate {
 public:
  ProposalGate(CoreState& s, Placement& place, Lifecycle& life) : s_(s), place_(place), life_(life) {}

  // `policy` names the proposer in logs; `index` is its place in the
  // chain (CoreState::policies), where its wake-ups go.
  void ApplyAll(const std::vector<Proposal>& proposals, std::string_view policy, uint32_t index = 0);
  void Apply(const Proposal& p, std::string_view policy, uint32_t index = 0);
  // Whether task t may get another attempt (`what`: copy, clone, restart)
  // proposed by `policy`: only when it is idempotent. A refusal is counted
  // once per task (JobStatusInfo::copies_refused_side_effects), logged and
  // told to the observers (the trace, the dashboard).
  bool MayRunAgain(Job& job, TaskIndex t, std::string_view what, std::string_view policy);
  // Whether a first attempt of a job other than `job`, left waiting by the
  // last pump, could run on `e`: then a copy of `job` may not take it
  // (docs/POLICIES.md, "Copies only use idle capacity").
  bool FirstAttemptWants(const Job& job, const ExecutorState& e) const;
  // Takes e's capacity out (no-op when it is already quarantined), or gives
  // it back, and tells the policies and the server. No cap or condition:
  // the callers check theirs (a policy's proposal, a timeout, a rest).
  void Quarantine(ExecutorState& e, const std::string& reason);
  void Release(ExecutorState& e, const std::string& reason);

 private:
  CoreState& s_;
  Placement& place_;
  Lifecycle& life_;
};

}  // namespace tailcut::core
