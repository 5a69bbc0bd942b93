// SchedulerCore::Impl's delivery of policy events and wake-ups
// (MitigationPolicy's hooks, policy.h; docs/PLUGINS.md "Events and
// wake-ups"). The class is in core_impl.h.
#include "core_impl.h"

namespace tailcut {

// Delivers the queued events and the wake-ups due now that were asked for
// before this call; false when there was nothing to deliver.
bool SchedulerCore::Impl::DeliverPolicyEvents() {
  bool any = false;
  // The executor whose avoid advice an ended attempt may have changed, not
  // asked yet: consecutive events of one executor (a Report's results) ask
  // once, after the last (issue 41). Nothing reads the advice meanwhile:
  // it is asked before any other event's hooks and before a proposal is
  // applied (placement reads it).
  ExecutorId refresh = 0;
  auto refresh_avoid = [&] {
    if (ExecutorState* x = refresh ? s_.FindExec(refresh) : nullptr) place_.RefreshAvoid(*x);
    refresh = 0;
  };
  auto call = [&](uint32_t i, std::string_view hook, auto&& fn) {
    GuardedPolicy& p = s_.policies[i];
    proposals_.clear();
    if (!CallPolicy(p, hook, fn) || proposals_.empty()) return;
    refresh_avoid();
    gate_.ApplyAll(proposals_, p.name, i);
  };
  if (!s_.policy_events.empty()) {
    any = true;
    std::vector<PolicyEvent>& events = delivering_;  // empty, its capacity kept (core_impl.h)
    events.swap(s_.policy_events);                   // what the gate posts meanwhile waits a round
    for (const PolicyEvent& ev : events) {
      if (ev.kind == PolicyEvent::Kind::kDropped) continue;
      const AttemptView& a = ev.attempt;
      // The policies' own view of the executor may change with it.
      const ExecutorId e = ev.kind == PolicyEvent::Kind::kEnded      ? a.executor
                           : ev.kind == PolicyEvent::Kind::kExecutor ? ev.executor
                                                                     : 0;
      if (refresh != e) refresh_avoid();
      for (uint32_t i = 0; i < s_.policies.size(); ++i) {
        switch (ev.kind) {
          case PolicyEvent::Kind::kLaunched:
            call(i, "OnAttemptLaunched", [&](MitigationPolicy& m) { m.OnAttemptLaunched(view_, a, &proposals_); });
            break;
          case PolicyEvent::Kind::kStarted:
            call(i, "OnAttemptStarted", [&](MitigationPolicy& m) { m.OnAttemptStarted(view_, a, &proposals_); });
            break;
          case PolicyEvent::Kind::kProgress:
            call(i, "OnAttemptProgress", [&](MitigationPolicy& m) { m.OnAttemptProgress(view_, a, &proposals_); });
            break;
          case PolicyEvent::Kind::kEnded:
            call(i, "OnAttemptEnded", [&](MitigationPolicy& m) { m.OnAttemptEnded(view_, a, ev.end, &proposals_); });
            break;
          case PolicyEvent::Kind::kExecutor:
            call(i, "OnExecutorChanged",
                 [&](MitigationPolicy& m) { m.OnExecutorChanged(view_, ev.executor, ev.change, &proposals_); });
            break;
          case PolicyEvent::Kind::kJobEnded:
            call(i, "OnJobEnded", [&](MitigationPolicy& m) { m.OnJobEnded(view_, ev.job, ev.state, &proposals_); });
            break;
          case PolicyEvent::Kind::kDropped: break;
        }
      }
      refresh = e;
    }
    refresh_avoid();
    events.capacity() > kKeptEvents ? std::vector<PolicyEvent>().swap(events) : events.clear();
  }
  const Time now = s_.Now();
  const uint64_t asked_before = s_.wakeup_seq;
  while (!s_.wakeups.empty() && s_.wakeups.top().at <= now && s_.wakeups.top().seq < asked_before) {
    PolicyWakeUp w = s_.wakeups.top();
    s_.wakeups.pop();
    auto it = s_.attempts.find(w.attempt);
    if (it == s_.attempts.end()) continue;  // ended meanwhile: dropped
    any = true;
    AttemptView a = s_.ViewOf(it->second);
    call(w.policy, "OnWakeUp", [&](MitigationPolicy& m) { m.OnWakeUp(view_, a, &proposals_); });
  }
  return any;
}

}  // namespace tailcut
