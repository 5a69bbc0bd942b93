// The mitigation-policy interface: policies see, the core does.
//
// A policy gets a read-only ClusterView and appends Proposals. The core
// checks every proposal against capacity and the redundancy budget before
// acting, so a buggy or greedy policy cannot overload the cluster. Policies
// chain in order; each sees the proposals accepted before it on this tick
// reflected in the view.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tailcut/common/clock.h"
#include "tailcut/common/ids.h"
#include "tailcut/scheduler/job.h"

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

class ClusterView {
 public:
  virtual ~ClusterView() = default;
  virtual Time Now() const = 0;
  virtual void ForEachJob(const std::function<void(const JobView&)>& fn) const = 0;
  virtual void ForEachRunningAttempt(const std::function<void(const AttemptView&)>& fn) const = 0;
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
};

struct Proposal {
  enum class Kind {
    kLaunchCopy,     // another attempt of (job, task); executor optional
    kCloneAtLaunch,  // job: launch each task with `copies` extra attempts
    kCancelAttempt,  // stop `attempt` (e.g. kill-and-restart elsewhere)
    kQuarantine,     // keep new work off `executor`
    kRelease,        // take `executor` back
  };
  Kind kind = Kind::kLaunchCopy;
  JobId job = 0;
  TaskIndex task = 0;
  AttemptId attempt = 0;
  ExecutorId executor = 0;    // kLaunchCopy: preferred target, 0 = any
  uint32_t copies = 1;        // kCloneAtLaunch
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
  // Periodic check, every `policy_interval_s` of the core's clock.
  virtual void OnTick(const ClusterView&, std::vector<Proposal>*) {}
  // Placement advice: true keeps new work off `e` while others have room.
  virtual bool AvoidExecutor(const ClusterView&, ExecutorId) const { return false; }
};

using PolicyChain = std::vector<std::unique_ptr<MitigationPolicy>>;

}  // namespace tailcut
