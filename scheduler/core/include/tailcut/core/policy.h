// The mitigation-policy interface: policies see, the core does.
//
// A policy gets a read-only ClusterView and appends Proposals. The core
// checks every proposal against capacity and the redundancy budget before
// acting, so a buggy or greedy policy cannot overload the cluster. Policies
// chain in order; each sees the proposals accepted before it on this tick
// reflected in the view.
//
// Policies are event-driven (docs/PLUGINS.md, "Events and wake-ups"): the
// core tells them when an attempt is launched, starts, progresses or ends,
// when a job ends and when an executor changes, and a policy may ask for a wake-up at a time
// it chooses for one attempt (Proposal::WakeUp). Their cost is then
// O(events), not O(running attempts) per tick; OnTick stays for what is
// truly periodic.
//
// Thread safety: the core calls its policies on its own thread only (the
// server's loop, the simulator), so a policy needs no locking; the
// ClusterView and AttemptViews it is handed are valid during the call only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tailcut/common/attempt_record.h"
#include "tailcut/common/clock.h"
#include "tailcut/common/ids.h"
#include "tailcut/core/job.h"

namespace tailcut {

class PredictorSuite;  // predictors/: latency, straggler and node health

struct AttemptView {
  AttemptId attempt = 0;
  JobId job = 0;
  TaskIndex task = 0;
  ExecutorId executor = 0;
  Time queued = 0;
  Time started = -1;       // -1 while queued on the executor
  float progress = -1;     // 0..1, -1 when the kernel reports none
  bool copy = false;       // a redundant copy
  uint32_t task_live = 1;  // live attempts of this task, this one included
};

struct JobView {
  JobId id = 0;
  const JobDef* def = nullptr;
  Time submitted = 0;
  uint32_t tasks = 0;
  uint32_t committed = 0;
  uint32_t unlaunched = 0;    // tasks never launched yet
  uint32_t running = 0;       // live attempts
  uint32_t copies = 0;        // redundant copies launched so far
  uint32_t needed = 0;        // commits that complete the job
};

struct ExecutorView {
  ExecutorId id = 0;
  std::string_view name;
  uint32_t slots = 0;
  uint32_t gpus = 0;
  uint32_t used_slots = 0;    // slots held by live attempts
  uint32_t running = 0;       // live attempts
  uint64_t finished = 0;
  bool quarantined = false;
};

// How an attempt ended (OnAttemptEnded).
struct AttemptEnd {
  AttemptOutcome outcome = AttemptOutcome::kCommitted;
  Time ended = 0;
  double run_s = 0;  // as reported, or measured by the core
};

// What happened to an executor (OnExecutorChanged).
enum class ExecutorChange {
  kJoined,
  kLeft,           // a clean goodbye; gone from the view
  kLost,           // heartbeats stopped; gone from the view
  kQuarantined,
  kReleased,
  kHealthChanged,  // PredictorSuite::Health(e) changed
};

class ClusterView {
 public:
  virtual ~ClusterView() = default;
  virtual Time Now() const = 0;
  virtual void ForEachJob(const std::function<void(const JobView&)>& fn) const = 0;
  // Every live attempt: O(running attempts). Event-driven policies should
  // not need it; it stays for OnTick policies and tools.
  virtual void ForEachRunningAttempt(const std::function<void(const AttemptView&)>& fn) const = 0;
  // The core's view answers the next three from its indexes (O(its
  // attempts), O(1), O(1)); the defaults, for views made elsewhere (tests,
  // wrappers), scan.
  // The live attempts on one executor, in attempt id order.
  virtual void ForEachAttemptOn(ExecutorId e, const std::function<void(const AttemptView&)>& fn) const {
    ForEachRunningAttempt([&](const AttemptView& a) {
      if (a.executor == e) fn(a);
    });
  }
  // A live attempt; false when it ended (or never was).
  virtual bool FindAttempt(AttemptId a, AttemptView* out) const {
    bool found = false;
    ForEachRunningAttempt([&](const AttemptView& x) {
      if (x.attempt == a) *out = x, found = true;
    });
    return found;
  }
  // Free slots on executors that are not quarantined.
  virtual uint64_t FreeSlots() const {
    uint64_t n = 0;
    ForEachExecutor([&](const ExecutorView& e) {
      if (!e.quarantined && e.slots > e.used_slots) n += e.slots - e.used_slots;
    });
    return n;
  }
  virtual void ForEachExecutor(const std::function<void(const ExecutorView&)>& fn) const = 0;
  virtual bool FindJob(JobId job, JobView* out) const = 0;
  virtual bool FindExecutor(ExecutorId e, ExecutorView* out) const = 0;
  // Run times of the job's committed tasks, in commit order.
  virtual const std::vector<float>& CommittedRunTimes(JobId job) const = 0;
  // Median of CommittedRunTimes (cached); 0 when none.
  virtual double MedianRunTime(JobId job) const = 0;
  // Redundant attempts the budget still allows right now.
  virtual uint32_t CopiesAllowed() const = 0;
  virtual uint32_t TotalSlots() const = 0;
  // Null when the core runs without predictors.
  virtual const PredictorSuite* Predictors() const = 0;
  // How much later than executors measure it the core hears of an attempt
  // (results waiting in its queues, the network): the same for every
  // attempt at once, the scheduler's own load, not a straggler. A lag most
  // results arrive within (the mean plus twice the mean distance between
  // successive samples), so a loop turn's jitter is not read as a straggler
  // either. 0 in views made elsewhere.
  virtual double ReportLag() const { return 0; }
  // Launched, not reported started, on an executor that holds more
  // attempts than it has slots (tiny tasks pipelined): it may be waiting
  // behind the others, which is queueing, not slowness.
  bool WaitingOnExecutor(const AttemptView& a) const {
    ExecutorView e;
    return a.started < 0 && (!FindExecutor(a.executor, &e) || e.used_slots > e.slots);
  }
  // The time an attempt has run, which is what policies judge: from its
  // start on its executor (from its launch when it had a free slot there
  // and no start is reported yet), less the report lag; 0 while it waits
  // in its executor's queue.
  double RunTime(const AttemptView& a) const {
    if (WaitingOnExecutor(a)) return 0;
    return std::max(0.0, Now() - (a.started >= 0 ? a.started : a.queued) - ReportLag());
  }
};

struct Proposal {
  enum class Kind {
    kLaunchCopy,     // another attempt of (job, task); executor optional
    kCloneAtLaunch,  // job: launch each task with `copies` extra attempts
    kCancelAttempt,  // stop `attempt` (e.g. kill-and-restart elsewhere)
    kQuarantine,     // keep new work off `executor`
    kRelease,        // take `executor` back
    kWakeUp,         // call this policy's OnWakeUp for `attempt` at time `at`
  };
  Kind kind = Kind::kLaunchCopy;
  JobId job = 0;
  TaskIndex task = 0;
  AttemptId attempt = 0;
  ExecutorId executor = 0;    // kLaunchCopy: preferred target, 0 = any
  uint32_t copies = 1;        // kCloneAtLaunch
  Time at = 0;                // kWakeUp
  std::string reason;         // shows up in logs and the timing record

  // Inline, so header-only external plugins (which link no tailcut library)
  // can use them too.
  static Proposal LaunchCopy(JobId j, TaskIndex t, std::string why, ExecutorId on = 0) {
    return {.kind = Kind::kLaunchCopy, .job = j, .task = t, .executor = on, .reason = std::move(why)};
  }
  static Proposal CloneAtLaunch(JobId j, uint32_t copies, std::string why) {
    return {.kind = Kind::kCloneAtLaunch, .job = j, .copies = copies, .reason = std::move(why)};
  }
  static Proposal CancelAttempt(AttemptId a, std::string why) {
    return {.kind = Kind::kCancelAttempt, .attempt = a, .reason = std::move(why)};
  }
  static Proposal Quarantine(ExecutorId e, std::string why) {
    return {.kind = Kind::kQuarantine, .executor = e, .reason = std::move(why)};
  }
  static Proposal Release(ExecutorId e, std::string why) {
    return {.kind = Kind::kRelease, .executor = e, .reason = std::move(why)};
  }
  // Wake-up for live attempt `a` at core time `t` (a past `t`: as soon as
  // possible). Dropped when the attempt has ended by then.
  static Proposal WakeUp(AttemptId a, Time t) {
    return {.kind = Kind::kWakeUp, .attempt = a, .at = t, .reason = std::string()};
  }
};

// A hook that throws disables its policy for good (an error log names it;
// what it proposed in that call is dropped); the core and the rest of the
// chain go on (docs/PLUGINS.md, "A policy that throws").
class MitigationPolicy {
 public:
  virtual ~MitigationPolicy() = default;
  virtual std::string_view name() const = 0;
  // A job was accepted (before any of its tasks launch).
  virtual void OnJobSubmitted(const ClusterView&, JobId, std::vector<Proposal>*) {}
  // Periodic check, every `policy_interval_s` of the core's clock. Keep it
  // for what is truly periodic; react to the events below instead of
  // scanning every attempt here.
  virtual void OnTick(const ClusterView&, std::vector<Proposal>*) {}

  // Events. Each is delivered once, in the order it happened, after the
  // core has placed the work of the event that caused it (so the view shows
  // the cluster as it is now). Proposals made here are applied at once.
  virtual void OnAttemptLaunched(const ClusterView&, const AttemptView&, std::vector<Proposal>*) {}
  // Not for an attempt that ended before its start was delivered (one
  // Report carried both): OnAttemptEnded alone comes, `started` set.
  virtual void OnAttemptStarted(const ClusterView&, const AttemptView&, std::vector<Proposal>*) {}
  virtual void OnAttemptProgress(const ClusterView&, const AttemptView&, std::vector<Proposal>*) {}
  // `a` as it was when it ended (task_live counts it); it is gone from the view.
  virtual void OnAttemptEnded(const ClusterView&, const AttemptView& /*a*/, const AttemptEnd&,
                              std::vector<Proposal>*) {}
  virtual void OnExecutorChanged(const ClusterView&, ExecutorId, ExecutorChange, std::vector<Proposal>*) {}
  // A wake-up this policy asked for (Proposal::WakeUp), at its time; `a` is live.
  virtual void OnWakeUp(const ClusterView&, const AttemptView& /*a*/, std::vector<Proposal>*) {}
  // A job ended (`state`: succeeded, failed or cancelled), after its live
  // attempts' OnAttemptEnded; it may be gone from the view. For what a
  // policy keeps per job: a job that fails or is cancelled ends with no
  // attempt committing its last task.
  virtual void OnJobEnded(const ClusterView&, JobId, JobState /*state*/, std::vector<Proposal>*) {}

  // Placement advice: true keeps new work off `e` while others have room.
  // The core caches the answer per executor and asks again only after an
  // event on `e` (it joined, an attempt on it ended, it was quarantined or
  // released, its health changed) and, for advice that changes with time
  // alone, in a sweep of the fleet spread over the OnTicks of a second (all
  // of it after each OnTick when they are a second or more apart).
  virtual bool AvoidExecutor(const ClusterView&, ExecutorId) const { return false; }
};

using PolicyChain = std::vector<std::unique_ptr<MitigationPolicy>>;

}  // namespace tailcut
