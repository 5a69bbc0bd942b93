// The scheduler's live dashboard (docs/DASHBOARD.md): what the page at `/`
// shows, kept on the loop's thread and published with the metrics snapshot
// (metrics.h), and its JSON API under /api/. Like /metrics, the HTTP
// threads only ever read a published State, never the core.
//
//   loop thread                          HTTP thread
//   Recorder (CoreObserver, OnLaunch)    RenderJobs / RenderExecutors /
//   Recorder::Collect(core) -> State  -> RenderAttempts / RenderLatency
//
// Memory is bounded whatever the load: the last kRecentAttempts ended
// attempts, the last kFinishedJobs finished jobs, kRunSamples run times per
// job, kLatencySamples job latencies; per running job one bit per task (was
// it launched before: a restart).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tailcut/core/scheduler_core.h"

namespace tailcut::dashboard {

inline constexpr size_t kRecentAttempts = 2000;
inline constexpr size_t kFinishedJobs = 100;
inline constexpr size_t kRunningJobsShown = 200;
// The fleet view's rows: the ones that want a look first (quarantined, not
// healthy), then by id; the page says how many there are in all.
inline constexpr size_t kExecutorsShown = 200;
inline constexpr size_t kRunSamples = 1024;
inline constexpr size_t kLatencySamples = 1000;

enum class AttemptKind { kFirst, kCopy, kRestart };
const char* AttemptKindName(AttemptKind k);  // "first", "copy", "restart"

// One attempt on the timeline: ended (outcome set) or still live.
struct AttemptView {
  uint64_t seq = 0;  // order of ending (live ones: 0); /api/attempts?since=
  AttemptId attempt = 0;
  JobId job = 0;
  TaskIndex task = 0;
  ExecutorId executor = 0;
  AttemptKind kind = AttemptKind::kFirst;
  bool live = false;
  AttemptOutcome outcome = AttemptOutcome::kCancelled;  // when !live
  Time queued = 0, started = -1, finished = -1;
  double run_s = 0;
};

struct JobView {
  JobStatusInfo status;
  uint64_t copies_won = 0;   // tasks whose committed attempt was a copy
  uint64_t restarts = 0;
  double run_p50 = -1, run_p99 = -1;  // committed attempts' run times; -1: none yet
};

// Everything the page shows, taken on the loop's thread.
struct State {
  Time now = 0;
  std::vector<JobView> jobs;  // running (newest first), then finished (newest first)
  std::vector<ExecutorStatusInfo> executors;                                   // at most kExecutorsShown
  uint64_t executors_total = 0, executors_not_healthy = 0, running_total = 0;  // the whole fleet
  std::vector<AttemptView> attempts;  // ended, oldest first, then live ones
  uint64_t last_seq = 0;
  std::vector<double> latencies;      // recent finished jobs, sorted
  uint64_t jobs_finished = 0;         // all since start (latencies holds the last kLatencySamples)
  std::vector<OwnerShareInfo> owners;  // TopOwners
  uint64_t total_slots = 0;
};

// Owners as /metrics and the dashboard show them, bounded (owners are
// clients): the kMaxOwnerSeries holding the most slots (ties: by name), then
// the rest summed as owner "(others)".
inline constexpr size_t kMaxOwnerSeries = 16;
std::vector<OwnerShareInfo> TopOwners(std::vector<OwnerShareInfo> all);

// The loop's side: a CoreObserver of the core whose clock is `clock`.
class Recorder final : public CoreObserver {
 public:
  explicit Recorder(const Clock* clock);
  ~Recorder() override;
  void OnAttemptLaunched(const LaunchCmd& launch, const std::string& identity) override;
  void OnAttemptEnded(const AttemptRecord& r) override;
  void OnJobFinished(const JobStatusInfo& job) override;
  State Collect(const SchedulerCore& core, Time now) const;

 private:
  struct JobStats;
  JobStats& Stats(JobId job);
  const Clock* clock_;
  std::unordered_map<JobId, std::unique_ptr<JobStats>> running_;
  std::unordered_map<AttemptId, AttemptView> live_;
  std::deque<AttemptView> ended_;
  uint64_t seq_ = 0;
  std::deque<JobView> finished_;
  std::deque<double> latencies_;
  uint64_t jobs_finished_ = 0;
};

// JSON bodies of the API. Strings are escaped for JSON and, as defence in
// depth, <, > and & become \u003c etc. (a name is never markup, even if a
// page forgot textContent); invalid UTF-8 becomes U+FFFD.
std::string RenderJobs(const State& s);
std::string RenderExecutors(const State& s);
std::string RenderAttempts(const State& s, uint64_t since);
std::string RenderLatency(const State& s);
// /api/owners: each owner's slots, its weight's fair share of the fleet
// among the owners with work, quota and jobs (docs/DASHBOARD.md).
std::string RenderOwners(const State& s);
std::string JsonString(std::string_view v);  // with the quotes

}  // namespace tailcut::dashboard
