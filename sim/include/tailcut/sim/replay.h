// The simulator as the `default` selector's replay engine (issue 39;
// tailcut/policies/replay.h): a learned class model becomes a scenario (its
// fleet, slow executors, arrivals and an empirical task-time law) run under
// each candidate. Synchronous: Start runs every candidate at once, so
// simulated schedules stay deterministic; the daemon runs it on a thread of
// its own (programs/tailcut-scheduler).
#pragma once

#include <memory>
#include <vector>

#include "tailcut/common/config.h"
#include "tailcut/common/status.h"
#include "tailcut/policies/replay.h"
#include "tailcut/sim/scenario.h"

namespace tailcut::sim {

// The scenario a model replays as; `policies` is the config the candidates
// read their [policies.*] tables from.
StatusOr<Scenario> ReplayScenario(const ReplayModel& m, const Config& policies);

class SimReplayEngine final : public ReplayEngine {
 public:
  explicit SimReplayEngine(Config policies) : policies_(std::move(policies)) {}
  bool Start(const ReplayModel& m, const std::vector<std::string>& candidates) override;
  bool Poll(std::vector<ReplayScore>* out) override;

 private:
  Config policies_;
  std::vector<ReplayScore> done_;
  bool ready_ = false;
};

// PolicyServices whose replays run in this simulator.
PolicyServices SimPolicyServices(const Config& policies);

// PolicyServices for a live scheduler (the daemon, `tailcut bench`'s
// in-process one): this simulator's replays on a thread of their own
// (ReplayThread: one at a time, at most [policies.selector] replay_queue
// waiting, at nice replay_nice); none when [policies.selector] replay is
// false (or its table is invalid: building `default` reports why).
PolicyServices LivePolicyServices(const Config& policies);

}  // namespace tailcut::sim
