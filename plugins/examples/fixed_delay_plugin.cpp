// Example external policy: `fixed_delay` copies any task whose only attempt
// has been running longer than `delay_s` (default 1 s), once per task.
// Build as a MODULE library against the tailcut headers; load with
//   policy chain "plugin:/path/libtailcut_example_plugin.so#fixed_delay"
// Parameters: [policies.fixed_delay] delay_s = 1.0, max_per_tick = 4.
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
  void OnTick(const tailcut::ClusterView& v, std::vector<tailcut::Proposal>* out) override {
    long long n = 0;
    v.ForEachRunningAttempt([&](const tailcut::AttemptView& a) {
      if (a.task_live != 1 || n >= max_per_tick_ || done_.count({a.job, a.task})) return;
      double elapsed = v.Now() - (a.started >= 0 ? a.started : a.queued);
      if (elapsed <= delay_) return;
      std::string why = "fixed_delay: running " + std::to_string(elapsed) + " s";
      out->push_back(tailcut::Proposal::LaunchCopy(a.job, a.task, std::move(why)));
      done_.insert({a.job, a.task});
      ++n;
    });
  }

 private:
  double delay_;
  long long max_per_tick_;
  std::set<std::pair<tailcut::JobId, tailcut::TaskIndex>> done_;
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
