// The core's boundary with mitigation policies. Inside the core errors are
// Status values, but policies are foreign code (external plugins too), so
// every hook the core calls goes through CallPolicy: a policy that throws is
// disabled for good, with one error log naming it, the hook and the
// exception, and the scheduler and the rest of the chain go on.
#pragma once

#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tailcut/core/policy.h"

namespace tailcut::core {

struct GuardedPolicy {
  std::unique_ptr<MitigationPolicy> policy;
  std::string name;      // read once: a broken policy is not called again, not even for logs
  std::string disabled;  // why it was disabled ("OnTick threw: ..."); empty while it runs
};

// The chain as the core holds it; null entries are dropped.
std::vector<GuardedPolicy> GuardPolicies(PolicyChain chain);

// Disables `p` and logs it at error level.
void DisablePolicy(GuardedPolicy& p, std::string_view hook, std::string_view what);

// Calls fn(*p.policy) unless `p` is disabled. True when it returned
// normally; false when disabled or when it threw (then `p` is disabled and
// the caller drops whatever the hook half-produced).
template <typename Fn>
bool CallPolicy(GuardedPolicy& p, std::string_view hook, Fn&& fn) {
  if (!p.disabled.empty()) return false;
  try {
    fn(*p.policy);
    return true;
  } catch (const std::exception& e) {
    DisablePolicy(p, hook, e.what());
  } catch (...) {
    DisablePolicy(p, hook, "an exception not derived from std::exception");
  }
  return false;
}

}  // namespace tailcut::core
