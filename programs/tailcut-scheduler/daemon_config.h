// The scheduler daemon's whole config: [scheduler] (LoadServerOptions),
// [replicas] (replicas_config.h), plus
// the scheduling part shared with simulation scenarios
// (LoadSchedulingConfig), the policy chain built, and the unknown-key check.
// Header-only: users link tailcut_scheduler (the ZeroMQ server),
// tailcut_policies and tailcut_sim (`default`'s replays, on a thread of
// their own: sim::LivePolicyServices), which must not depend on each other.
#pragma once

#include "replicas_config.h"
#include "tailcut/policies/registry.h"
#include "tailcut/policies/scheduling_config.h"
#include "tailcut/server/server.h"
#include "tailcut/sim/replay.h"

namespace tailcut {

// `replicas_file`: --replicas FILE ("" = none; [replicas] may be in `cfg`).
inline StatusOr<PolicyChain> LoadDaemonConfig(const Config& cfg, ServerOptions* out,
                                              const std::string& replicas_file = "") {
  SchedulingConfig sched;
  sched.core = out->core;
  sched.predictor = out->predictor;
  if (Status s = LoadSchedulingConfig(cfg, &sched); !s.ok()) return s;
  out->core = sched.core;
  out->predictor = sched.predictor;
  if (Status s = LoadServerOptions(cfg, out); !s.ok()) return s;
  if (Status s = LoadReplicasConfig(cfg, replicas_file, out); !s.ok()) return s;
  auto policies = MakePolicyChain(sched.chain, cfg, sim::LivePolicyServices(cfg));
  if (!policies.ok()) return policies.status();
  if (Status s = cfg.CheckAllUsed(); !s.ok()) return s;
  return policies;
}

}  // namespace tailcut
