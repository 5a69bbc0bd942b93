// The scheduling part of a config, read the same way by the daemon
// (tailcut-scheduler) and by simulation scenarios (tailcut sim / bench):
// [core], [owners], [predictor], policies.chain and every [policies.NAME] table.
//
// Callers read their own sections too and then call cfg.CheckAllUsed(), so a
// misspelled key anywhere (a policy table included) is the same
// "unknown key" error in both.
#pragma once

#include <string>

#include "tailcut/common/config.h"
#include "tailcut/common/status.h"
#include "tailcut/core/policy.h"
#include "tailcut/core/scheduler_core.h"
#include "tailcut/policies/replay.h"
#include "tailcut/predictors/predictor.h"

namespace tailcut {

struct SchedulingConfig {
  CoreOptions core;               // [core]; core.owners from [owners]
  PredictorOptions predictor;     // [predictor]
  std::string chain = "default";  // policies.chain
};

// Reads [core], [owners], [predictor] and policies.chain into *out (absent keys keep
// the values already in *out), then ValidatePolicyTables(cfg, out->chain).
Status LoadSchedulingConfig(const Config& cfg, SchedulingConfig* out);

// Builds the policy of every [policies.NAME] table present (and every
// [[policies.external]] entry), so that each table's keys are read and its
// values checked. A table that is neither a built-in policy nor named by a
// plugin:PATH[#NAME] entry of `chain` is an error listing the known names.
Status ValidatePolicyTables(const Config& cfg, const std::string& chain);

// "clone+spark" (one --policy entry of `tailcut sim` / `tailcut bench`) ->
// the chain it names, through the registry. A policy of the entry may carry
// parameters of its own table, "hedge@quantile=0.9@min_samples=10" (a
// threshold grid's candidates for `default`, docs/POLICIES.md); a key the
// policy does not read is an error.
StatusOr<PolicyChain> MakePolicyEntry(const std::string& entry, const Config& cfg, const PolicyServices& services = {});

}  // namespace tailcut
