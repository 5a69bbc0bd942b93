// Test-only policy `race_copies` (the chaos soak, issue 43): one copy of
// every task, asked for the moment its first attempt starts, so that the
// copy races the original every run. The default chain's copies sit
// behind the payoff controller, which may launch none; this one is outside
// it, in the chain after `default`. Only the proposal gate and the copy
// budget (core.redundancy_budget, core.min_copies) stand between it and a
// copy: what exactly-once must survive is the race itself.
// Load: --policy "default,plugin:PATH#race_copies".
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <utility>

#include "tailcut/plugins/plugin_api.h"

namespace {

class RaceCopies final : public tailcut::MitigationPolicy {
 public:
  std::string_view name() const override { return "race_copies"; }
  void OnAttemptStarted(const tailcut::ClusterView&, const tailcut::AttemptView& a,
                        std::vector<tailcut::Proposal>* out) override {
    if (a.copy || a.task_live != 1 || !asked_.insert({a.job, a.task}).second) return;
    out->push_back(tailcut::Proposal::LaunchCopy(a.job, a.task, "race_copies: a copy races every task"));
    // Copies take idle slots only: without one now, ask once more shortly.
    out->push_back(tailcut::Proposal::WakeUp(a.attempt, a.started + kRetryS));
  }
  void OnWakeUp(const tailcut::ClusterView&, const tailcut::AttemptView& a,
                std::vector<tailcut::Proposal>* out) override {
    if (a.task_live == 1) out->push_back(tailcut::Proposal::LaunchCopy(a.job, a.task, "race_copies: again"));
  }
  void OnAttemptEnded(const tailcut::ClusterView&, const tailcut::AttemptView& a, const tailcut::AttemptEnd&,
                      std::vector<tailcut::Proposal>*) override {
    if (a.task_live <= 1) asked_.erase({a.job, a.task});  // its last attempt: bounded memory
  }

 private:
  static constexpr double kRetryS = 0.005;
  std::set<std::pair<tailcut::JobId, tailcut::TaskIndex>> asked_;
};

}  // namespace

extern "C" {

int tailcut_plugin_api_version(void) { return TAILCUT_PLUGIN_API_VERSION; }

tailcut::MitigationPolicy* tailcut_plugin_create(const char* name, const TailcutPluginHost*, char* err, size_t errlen) {
  if (name && *name && std::strcmp(name, "race_copies") != 0) {
    if (errlen) std::snprintf(err, errlen, "unknown policy '%s' (this plugin offers: race_copies)", name);
    return nullptr;
  }
  return new RaceCopies();
}

void tailcut_plugin_destroy(tailcut::MitigationPolicy* p) { delete p; }

}  // extern "C"
