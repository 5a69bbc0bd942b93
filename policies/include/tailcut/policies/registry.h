// Built-in mitigation policies by name, and chains of them from config.
//
// A chain is a comma-separated list of names ("clone,spark,reassign");
// "default" names the chain tailcut uses when none is configured, and
// "none" the empty chain. Each policy reads its parameters from the
// config table [policies.NAME] (documented in docs/POLICIES.md).
#pragma once

#include <string>
#include <vector>

#include "tailcut/common/config.h"
#include "tailcut/common/status.h"
#include "tailcut/core/policy.h"

namespace tailcut {

// "a, b ,c" -> {"a", "b", "c"}: comma-separated names, blanks trimmed.
std::vector<std::string> SplitPolicyList(const std::string& list);
// The names MakePolicyChain accepts (besides "none" and "default").
std::vector<std::string> BuiltinPolicyNames();
// The chain "default" expands to.
std::vector<std::string> DefaultPolicyChain();
// Builds the chain; unknown names and bad parameters are errors.
StatusOr<PolicyChain> MakePolicyChain(const std::string& chain, const Config& cfg);

}  // namespace tailcut
