// The scheduler's Prometheus metrics (docs/METRICS.md): what one scrape
// shows, how it is rendered (text format 0.0.4), and how the numbers cross
// from the scheduler loop's thread to the HTTP thread without that thread
// ever touching the core.
//
//   loop thread                        HTTP thread (/metrics)
//   SchedulerMetrics::OnJobFinished    Fresh(): ask for a snapshot, wait
//   SchedulerMetrics::MaybePublish  -> for the loop's next turn, render it
//
// The loop builds a snapshot only when a scrape asked for one, so an
// unscraped scheduler pays one atomic load per turn, and a scrape that
// follows an event (a job the client saw finish) sees it.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include <string>
#include <string_view>
#include <vector>
#include "tailcut/common/thread_annotations.h"

#include "dashboard.h"
#include "tailcut/core/scheduler_core.h"

namespace tailcut::metrics {

// A cumulative-on-render histogram: counts are kept per bucket and summed
// when rendered, as Prometheus wants `le` buckets cumulative.
struct Histogram {
  std::vector<double> bounds;    // upper bounds, ascending; +Inf is implicit
  std::vector<uint64_t> counts;  // per bucket, bounds.size() + 1 (the last: above every bound)
  double sum = 0;
  uint64_t count = 0;

  explicit Histogram(std::vector<double> upper_bounds = {});
  void Observe(double v);
};

// Job latency (submit to final state) bucket bounds, seconds: sub-second
// fan-outs up to hour-long jobs.
std::vector<double> JobLatencyBounds();
// Journal commit (one group-commit transaction) bucket bounds, seconds:
// a page-cache write up to a disk that stalls the scheduler.
std::vector<double> JournalCommitBounds();
// A loop turn's CPU time bucket bounds, seconds: what one turn's work held
// up every other peer's messages (issue 43).
std::vector<double> LoopTurnBounds();

// Executors by the node-health detector's state, in NodeHealth order.
inline constexpr std::array<NodeHealth, 4> kHealthStates = {NodeHealth::kHealthy, NodeHealth::kSuspect,
                                                            NodeHealth::kFailSlow, NodeHealth::kRecovered};

// The bounds (docs/LIMITS.md): what the connection guard shed and what
// every limit refused since the scheduler started (the server fills it).
struct Bounds {
  uint64_t connections_accepted = 0;
  uint64_t shed_unfinished = 0, shed_idle = 0, backlog_refused = 0;  // connections shut down, by why
  uint64_t accept_failures = 0;                                      // EMFILE/ENFILE at accept
  uint64_t connections_unfinished = 0;                               // handshakes unfinished now
  uint64_t descriptor_limit = 0;
  // Replies to clients whose queue (client_hwm) was full: held back in the
  // scheduler, dropped (client gone or disconnected), clients disconnected
  // for not reading, and the bytes held now.
  uint64_t replies_held = 0, replies_dropped = 0, clients_disconnected = 0, client_backlog_bytes = 0;
  // Frames decoded off the loop (frame_decoder.h), the bytes waiting for
  // or in the decoder now, and the times a socket waited for room there.
  uint64_t frames_decoded_off_loop = 0, decode_queue_bytes = 0, decode_waits = 0;
  std::vector<std::pair<std::string, uint64_t>> refusals;  // limit (its config key) -> refusals
};

// A replica's place in its group (docs/RELIABILITY.md, "Replicas"); the
// server fills it, a single scheduler has none.
struct ReplicaStatus {
  uint64_t id = 0;         // this replica
  uint64_t leader_id = 0;  // the leader it knows (0: none known)
  bool leading = false;    // it leads and has taken over: it serves
  uint64_t term = 0, applied_index = 0;
  std::vector<std::pair<uint64_t, uint64_t>> follower_lag;  // on the leader: follower id -> entries behind
};

// Everything one scrape shows, taken on the loop's thread.
struct Snapshot {
  CoreCounters counters;
  uint64_t jobs_running = 0;
  uint64_t waiting_tasks = 0;  // tailcut_dispatch_queue_length
  uint64_t live_attempts = 0;
  uint64_t total_slots = 0;
  std::array<uint64_t, kHealthStates.size()> executors_by_health{};
  uint64_t executors_quarantined = 0;
  // Owners' shares (dashboard::TopOwners: bounded, the rest as "(others)").
  std::vector<OwnerShareInfo> owners;
  Histogram job_latency{JobLatencyBounds()};
  Histogram journal_commit{JournalCommitBounds()};  // empty without a journal
  uint64_t journal_commit_failures = 0;
  Histogram loop_turn_cpu{LoopTurnBounds()};
  Bounds bounds;
  std::optional<ReplicaStatus> replica;
  // The dashboard's view (dashboard.h), when one is attached; else null.
  std::shared_ptr<const dashboard::State> dashboard;
};

// Reads the core (loop thread only).
Snapshot Collect(const SchedulerCore& core, const Histogram& job_latency);

// The Prometheus text exposition of `s` (HELP, TYPE, samples).
std::string Render(const Snapshot& s);

// /api/replica (docs/DASHBOARD.md): `{"replica": null}` for a single
// scheduler, else {"replica": {"id", "leading", "leader_id", "term",
// "applied_index", "followers": [{"id", "lag"}]}}.
std::string RenderReplicaJson(const std::optional<ReplicaStatus>& r);

// Label values escape \, " and newline (text format 0.0.4); HELP text
// escapes \ and newline.
std::string EscapeLabelValue(std::string_view v);
// A sample value: integers without a fraction, +Inf / -Inf / NaN spelled
// as Prometheus reads them.
std::string FormatValue(double v);

// The loop's side and the HTTP side of the metrics; one per server.
class SchedulerMetrics final : public CoreObserver {
 public:
  // --- loop thread ---
  void OnJobFinished(const JobStatusInfo& job) override;
  // A journal transaction took `seconds`; `ok` false: it failed (the
  // replies it carried stay held).
  void OnJournalCommit(double seconds, bool ok);
  // A turn of the loop took `cpu_seconds` of its thread's CPU time.
  void OnLoopTurn(double cpu_seconds) { loop_turn_cpu_.Observe(cpu_seconds); }
  // Publishes a snapshot when a scrape waits for one (cheap otherwise).
  // `now`: the core's clock, for the dashboard's timeline.
  void MaybePublish(const SchedulerCore& core, Time now = 0);
  // Snapshots also carry `recorder`'s State (the loop owns the recorder;
  // attach before the HTTP server starts).
  void AttachDashboard(const dashboard::ActivityRecorder* recorder) { dashboard_ = recorder; }
  // Snapshots also carry the bounds `source` reports (called on the loop's
  // thread, only for a snapshot a scrape asked for).
  void AttachBounds(std::function<Bounds()> source) { bounds_ = std::move(source); }
  // ... and, for a replica, its place in the group.
  void AttachReplica(std::function<ReplicaStatus()> source) { replica_ = std::move(source); }

  // --- any thread ---
  // Asks the loop for a snapshot and waits up to `timeout` for it; when the
  // loop does not answer in time (stopped, or a long turn) the last one
  // published is used, null if there never was one.
  std::shared_ptr<const Snapshot> Fresh(std::chrono::milliseconds timeout);

 private:
  Histogram job_latency_{JobLatencyBounds()};        // loop thread only
  Histogram journal_commit_{JournalCommitBounds()};  // loop thread only
  uint64_t journal_commit_failures_ = 0;             // loop thread only
  Histogram loop_turn_cpu_{LoopTurnBounds()};        // loop thread only
  const dashboard::ActivityRecorder* dashboard_ = nullptr;
  std::function<Bounds()> bounds_;
  std::function<ReplicaStatus()> replica_;

  std::atomic<bool> wanted_{false};
  Mutex mu_;
  CondVar published_;
  uint64_t generation_ TC_GUARDED_BY(mu_) = 0;
  std::shared_ptr<const Snapshot> latest_ TC_GUARDED_BY(mu_);
};

}  // namespace tailcut::metrics
