#include "policy_guard.h"

#include "tailcut/common/log.h"

namespace tailcut::core {

std::vector<GuardedPolicy> GuardPolicies(PolicyChain chain) {
  std::vector<GuardedPolicy> out;
  for (auto& p : chain) {
    if (!p) continue;
    GuardedPolicy g{std::move(p), "policy #" + std::to_string(out.size() + 1), ""};
    CallPolicy(g, "name()", [&](MitigationPolicy& m) { g.name = std::string(m.name()); });
    out.push_back(std::move(g));
  }
  return out;
}

void DisablePolicy(GuardedPolicy& p, std::string_view hook, std::string_view what) {
  p.disabled = std::string(hook) + " threw: " + std::string(what);
  TC_LOG(Error) << "policy '" << p.name << "' disabled: " << p.disabled
                << " (the scheduler and the rest of the policy chain go on without it)";
}

}  // namespace tailcut::core
