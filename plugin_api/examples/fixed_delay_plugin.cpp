// Example external policy: `fixed_delay` copies any task whose only attempt
// has been running longer than `delay_s` (default 1 s), once per task.
// Event-driven (plugin API 2): when an attempt starts it asks the core for a
// wake-up `delay_s` later, and judges that one attempt then, so it costs
// O(attempts), not O(running attempts) per tick.
// Build as a MODULE library against the tailcut headers; load with
//   policy chain "plugin:/path/libtailcut_example_plugin.so#fixed_delay"
// Parameters: [policies.fixed_delay] delay_s = 1.0, max_per_tick = 4 (the
// most copies it proposes per policy interval).
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <utility>

#include "tailcut/plugins/plugin_api.h"

namespace {

class FixedDelay final : public tailcut::MitigationPolicy {
 public:
  FixedDelay(double delay, long long max_per_tick) : delay_(delay), max_per_tick_(max_per_tick) {}
  std::string_view name() const override { return "fixed_delay"; }
  void OnAttemptStarted(const tailcut::ClusterView&, const tailcut::AttemptView& a,
                        std::vector<tailcut::Proposal>* out) override {
    out->push_back(tailcut::Proposal::WakeUp(a.attempt, a.started + delay_));
  }
  void OnWakeUp(const tailcut::ClusterView& v, const tailcut::AttemptView& a,
                std::vector<tailcut::Proposal>* out) override {
    if (a.task_live != 1 || done_.count({a.job, a.task})) return;
    if (copies_this_tick_ >= max_per_tick_) {  // over the rate: look again next interval
      deferred_.insert(a.attempt);
      return;
    }
    double elapsed = v.Now() - (a.started >= 0 ? a.started : a.queued);
    std::string why = "fixed_delay: running " + std::to_string(elapsed) + " s";
    out->push_back(tailcut::Proposal::LaunchCopy(a.job, a.task, std::move(why)));
    done_.insert({a.job, a.task});
    ++copies_this_tick_;
  }
  void OnTick(const tailcut::ClusterView& v, std::vector<tailcut::Proposal>* out) override {
    copies_this_tick_ = 0;
    for (tailcut::AttemptId a : deferred_) out->push_back(tailcut::Proposal::WakeUp(a, v.Now()));
    deferred_.clear();
  }
  void OnAttemptEnded(const tailcut::ClusterView&, const tailcut::AttemptView& a, const tailcut::AttemptEnd&,
                      std::vector<tailcut::Proposal>*) override {
    if (a.task_live <= 1) done_.erase({a.job, a.task});  // its last attempt: bounded memory
  }

 private:
  double delay_;
  long long max_per_tick_;
  long long copies_this_tick_ = 0;
  std::set<std::pair<tailcut::JobId, tailcut::TaskIndex>> done_;
  std::set<tailcut::AttemptId> deferred_;
};

void SetErr(char* err, size_t len, const std::string& m) {
  if (len) std::snprintf(err, len, "%s", m.c_str());
}

}  // namespace

extern "C" {

int tailcut_plugin_api_version(void) { return TAILCUT_PLUGIN_API_VERSION; }

tailcut::MitigationPolicy* tailcut_plugin_create(const char* name, const TailcutPluginHost* host, char* err,
                                                 size_t errlen) {
  if (name && *name && std::strcmp(name, "fixed_delay") != 0) {
    SetErr(err, errlen, std::string("unknown policy '") + name + "' (this plugin offers: fixed_delay)");
    return nullptr;
  }
  double delay = 1.0;
  long long max_per_tick = 4;
  if (host->get_double(host->ctx, "delay_s", &delay) < 0 || delay < 0) {
    SetErr(err, errlen, std::string(host->prefix) + "delay_s must be a number >= 0");
    return nullptr;
  }
  if (host->get_int(host->ctx, "max_per_tick", &max_per_tick) < 0 || max_per_tick < 1) {
    SetErr(err, errlen, std::string(host->prefix) + "max_per_tick must be an integer >= 1");
    return nullptr;
  }
  return new FixedDelay(delay, max_per_tick);
}

void tailcut_plugin_destroy(tailcut::MitigationPolicy* p) { delete p; }

}  // extern "C"
