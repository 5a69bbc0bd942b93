// Two tiers on virtual time (`[cluster.edges]`, docs/EDGE.md "Two tiers"):
// a parent SchedulerCore whose executors are edges, and one SchedulerCore
// per edge whose executors are modelled devices, as the live edge tier
// (scheduler/server/src/parent_link.h) runs them.
#pragma once

#include <cstdint>
#include <vector>

#include "tailcut/core/policy.h"
#include "tailcut/sim/scenario.h"
#include "tailcut/sim/simulator.h"

namespace tailcut::sim {

// `edge_chains`: one chain per edge (scenario.cluster.edges.count).
SimResult RunTwoTier(const Scenario& scenario, PolicyChain parent_chain, std::vector<PolicyChain> edge_chains,
                     uint64_t seed);

}  // namespace tailcut::sim
