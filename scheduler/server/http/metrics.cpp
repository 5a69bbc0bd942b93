#include "metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

namespace tailcut::metrics {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds(std::move(upper_bounds)), counts(bounds.size() + 1, 0) {}

void Histogram::Observe(double v) {
  // A value equal to a bound belongs to it (le = less or equal).
  size_t i = std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin();
  counts[i]++;
  sum += v;
  count++;
}

std::vector<double> JobLatencyBounds() { return {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}; }

std::vector<double> JournalCommitBounds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
}

std::vector<double> LoopTurnBounds() { return {0.0001, 0.001, 0.01, 0.025, 0.05, 0.1, 0.25, 1}; }

Snapshot Collect(const SchedulerCore& core, const Histogram& job_latency) {
  Snapshot s;
  s.counters = core.Counters();
  s.jobs_running = core.RunningJobs();
  s.waiting_tasks = core.WaitingTasks();
  s.live_attempts = core.LiveAttempts();
  for (const ExecutorStatusInfo& e : core.Executors()) {
    s.total_slots += e.slots;
    s.executors_quarantined += e.quarantined;
    for (size_t i = 0; i < kHealthStates.size(); ++i)
      if (e.health.state == kHealthStates[i]) s.executors_by_health[i]++;
  }
  s.owners = dashboard::TopOwners(core.OwnerShares());
  s.job_latency = job_latency;
  return s;
}

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // Integral values (counts) print exactly, without an exponent; others in
  // the shortest form that reads back the same (0.05, not 0.05000000000000000277).
  char buf[64];
  bool integral = v == std::floor(v) && std::fabs(v) < 1e15;
  auto r = integral ? std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 0)
                    : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

namespace {

// Writes one metric family: HELP and TYPE once, then its samples.
class Writer {
 public:
  void Family(std::string_view name, std::string_view type, std::string_view help) {
    out_ << "# HELP " << name << ' ' << EscapeHelp(help) << '\n' << "# TYPE " << name << ' ' << type << '\n';
  }
  // A family of one unlabelled sample.
  void One(std::string_view name, std::string_view type, std::string_view help, double v) {
    Family(name, type, help);
    Sample(name, v);
  }
  void Sample(std::string_view name, double v) { out_ << name << ' ' << FormatValue(v) << '\n'; }
  void Sample(std::string_view name, std::string_view label, std::string_view value, double v) {
    out_ << name << '{' << label << "=\"" << EscapeLabelValue(value) << "\"} " << FormatValue(v) << '\n';
  }
  void Histogram(std::string_view name, const metrics::Histogram& h) {
    uint64_t cumulative = 0;
    std::string bucket = std::string(name) + "_bucket";
    for (size_t i = 0; i < h.bounds.size(); ++i) {
      cumulative += h.counts[i];
      Sample(bucket, "le", FormatValue(h.bounds[i]), static_cast<double>(cumulative));
    }
    Sample(bucket, "le", "+Inf", static_cast<double>(h.count));
    Sample(std::string(name) + "_sum", h.sum);
    Sample(std::string(name) + "_count", static_cast<double>(h.count));
  }
  std::string str() const { return out_.str(); }

 private:
  static std::string EscapeHelp(std::string_view v) {
    std::string out;
    for (char c : v) {
      if (c == '\\')
        out += "\\\\";
      else if (c == '\n')
        out += "\\n";
      else
        out += c;
    }
    return out;
  }
  std::ostringstream out_;
};

}  // namespace

namespace {

// The bounds (docs/LIMITS.md, docs/METRICS.md "Bounds").
void RenderBounds(const Bounds& b, Writer& w) {
  auto d = [](uint64_t v) { return static_cast<double>(v); };
  w.One("tailcut_connections_accepted_total", "counter", "TCP connections accepted on the executor and client ports.",
        d(b.connections_accepted));
  w.Family("tailcut_connections_shed_total", "counter",
           "Connections the guard shut down or turned away: unfinished handshakes (past the cap or out of "
           "descriptors), idle ones (out of descriptors), and the listen backlog (out of descriptors).");
  w.Sample("tailcut_connections_shed_total", "reason", "unfinished", d(b.shed_unfinished));
  w.Sample("tailcut_connections_shed_total", "reason", "idle", d(b.shed_idle));
  w.Sample("tailcut_connections_shed_total", "reason", "backlog", d(b.backlog_refused));
  w.One("tailcut_connection_accept_failures_total", "counter",
        "accept() failures for want of descriptors (EMFILE, ENFILE) reported by the listeners.", d(b.accept_failures));
  w.One("tailcut_connections_unfinished", "gauge", "Connections whose handshake has not finished yet.",
        d(b.connections_unfinished));
  w.One("tailcut_descriptor_limit", "gauge", "The descriptor limit the scheduler runs with (RLIMIT_NOFILE).",
        d(b.descriptor_limit));
  w.One("tailcut_client_replies_held_total", "counter",
        "Replies to a client whose queue (client_hwm) was full, held back in the scheduler until it reads.",
        d(b.replies_held));
  w.One("tailcut_client_replies_dropped_total", "counter",
        "Replies to clients dropped: the client was gone, or disconnected for not reading.", d(b.replies_dropped));
  w.One("tailcut_client_disconnects_total", "counter",
        "Clients disconnected for not reading: held-back replies over client_backlog_bytes, or none read for "
        "client_stall_s.",
        d(b.clients_disconnected));
  w.One("tailcut_client_backlog_bytes", "gauge", "Bytes of replies held back for clients now.",
        d(b.client_backlog_bytes));
  w.One("tailcut_frames_decoded_off_loop_total", "counter",
        "Frames of at least decode_off_loop_bytes (and the later frames of the same peer) parsed on the "
        "decoder's thread instead of the loop's.",
        d(b.frames_decoded_off_loop));
  w.One("tailcut_decode_queue_bytes", "gauge", "Bytes of frames waiting for or in the decoder now.",
        d(b.decode_queue_bytes));
  w.One("tailcut_decode_waits_total", "counter",
        "Times a socket stopped being read because its next frame did not fit in decode_queue_bytes.",
        d(b.decode_waits));
  w.Family("tailcut_refusals_total", "counter",
           "Requests and registrations a limit refused (BUSY, TOO_LARGE, a key not trusted), by the limit's "
           "config key.");
  for (const auto& [limit, n] : b.refusals) w.Sample("tailcut_refusals_total", "limit", limit, d(n));
}

void RenderReplica(const ReplicaStatus& r, Writer& w) {
  auto d = [](uint64_t v) { return static_cast<double>(v); };
  w.One("tailcut_replica_id", "gauge", "This scheduler's replica id ([replicas]).", d(r.id));
  w.One("tailcut_replica_leading", "gauge",
        "1 on the replica that leads and has taken over (it alone accepts, dispatches and commits), else 0.",
        r.leading ? 1 : 0);
  w.One("tailcut_replica_leader_id", "gauge", "The leader this replica knows (0: none known, an election).",
        d(r.leader_id));
  w.One("tailcut_replica_term", "gauge", "The Raft term this replica is in.", d(r.term));
  w.One("tailcut_replica_applied_index", "gauge", "The last Raft log index applied to this replica's journal.",
        d(r.applied_index));
  w.Family("tailcut_replica_follower_lag_entries", "gauge",
           "On the leader: the log entries each follower lacks of those the leader applied.");
  for (const auto& [id, lag] : r.follower_lag)
    w.Sample("tailcut_replica_follower_lag_entries", "replica", std::to_string(id), d(lag));
}

}  // namespace

std::string Render(const Snapshot& s) {
  const CoreCounters& c = s.counters;
  auto d = [](uint64_t v) { return static_cast<double>(v); };
  Writer w;
  // A gauge, not a counter: "running" goes down. The finished states only
  // grow (until a restart); tailcut_jobs_finished_total is the counter form.
  w.Family("tailcut_jobs", "gauge",
           "Jobs by state: running now; succeeded, failed, cancelled since the scheduler started.");
  w.Sample("tailcut_jobs", "state", "running", d(s.jobs_running));
  w.Sample("tailcut_jobs", "state", "succeeded", d(c.jobs_succeeded));
  w.Sample("tailcut_jobs", "state", "failed", d(c.jobs_failed));
  w.Sample("tailcut_jobs", "state", "cancelled", d(c.jobs_cancelled));
  w.Family("tailcut_jobs_finished_total", "counter", "Jobs that reached a final state, by that state.");
  w.Sample("tailcut_jobs_finished_total", "state", "succeeded", d(c.jobs_succeeded));
  w.Sample("tailcut_jobs_finished_total", "state", "failed", d(c.jobs_failed));
  w.Sample("tailcut_jobs_finished_total", "state", "cancelled", d(c.jobs_cancelled));
  w.One("tailcut_tasks_committed_total", "counter", "Tasks committed (the first successful attempt of each).",
        d(c.tasks_committed));
  w.Family("tailcut_attempts_total", "counter",
           "Attempts launched: first (a task's first), copy (speculation, clone, hedge), restart (relaunch of a "
           "task whose attempts ended without a result).");
  w.Sample("tailcut_attempts_total", "kind", "first", d(c.attempts_first));
  w.Sample("tailcut_attempts_total", "kind", "copy", d(c.attempts_copy));
  w.Sample("tailcut_attempts_total", "kind", "restart", d(c.attempts_restart));
  w.One("tailcut_extra_machine_seconds_total", "counter",
        "Run time of attempts that ended without committing (superseded, failed, cancelled, lost).", c.extra_machine_s);
  w.One("tailcut_reports_refused_total", "counter",
        "Results, adoptions, starts and progress reports refused: the attempt was never handed to the executor "
        "that sent them.",
        d(c.reports_refused));
  w.One("tailcut_attempts_timed_out_total", "counter",
        "Attempts cancelled at their time limit (a task's timeout_s, core.task_timeout_s, or the default "
        "relative to the predicted run time).",
        d(c.attempts_timed_out));
  w.One("tailcut_copies_preempted_total", "counter",
        "Copies (speculation, clones, hedges) cancelled so that another job's first attempt could have the slot.",
        d(c.copies_preempted));
  w.One("tailcut_executor_rests_total", "counter",
        "Times an executor that handed back attempts unrun, again and again, was given no work for a while "
        "(core.rest_after_refusals).",
        d(c.executor_rests));
  w.Family("tailcut_owner_slots", "gauge",
           "Slots held by each owner's live attempts (the 16 holding most, the rest as owner=\"(others)\").");
  for (const OwnerShareInfo& o : s.owners) w.Sample("tailcut_owner_slots", "owner", o.owner, d(o.slots));
  w.Family("tailcut_owner_weight", "gauge", "Each owner's fair-share weight ([owners]; summed for \"(others)\").");
  for (const OwnerShareInfo& o : s.owners) w.Sample("tailcut_owner_weight", "owner", o.owner, o.weight);
  w.Family("tailcut_owner_jobs_running", "gauge", "Each owner's running jobs.");
  for (const OwnerShareInfo& o : s.owners) w.Sample("tailcut_owner_jobs_running", "owner", o.owner, d(o.jobs));
  w.One("tailcut_attempts_running", "gauge", "Live attempts (running or queued on an executor).", d(s.live_attempts));
  w.One("tailcut_dispatch_queue_length", "gauge",
        "Tasks of running jobs waiting for a slot (never launched, or requeued).", d(s.waiting_tasks));
  w.Family("tailcut_executors", "gauge", "Registered executors by node health.");
  for (size_t i = 0; i < kHealthStates.size(); ++i)
    w.Sample("tailcut_executors", "health", NodeHealthName(kHealthStates[i]), d(s.executors_by_health[i]));
  w.One("tailcut_executors_quarantined", "gauge", "Executors kept from new work (quarantined).",
        d(s.executors_quarantined));
  w.One("tailcut_slots", "gauge", "CPU slots of all registered executors.", d(s.total_slots));
  w.Family("tailcut_job_latency_seconds", "histogram", "Finished jobs' latency, submit to final state.");
  w.Histogram("tailcut_job_latency_seconds", s.job_latency);
  w.Family("tailcut_journal_commit_seconds", "histogram",
           "Journal transactions (group commits): how long client replies waited on the disk.");
  w.Histogram("tailcut_journal_commit_seconds", s.journal_commit);
  w.One("tailcut_journal_commit_failures_total", "counter",
        "Journal transactions that failed (their client replies stay held until one succeeds).",
        d(s.journal_commit_failures));
  w.Family("tailcut_loop_turn_cpu_seconds", "histogram",
           "The scheduler loop's turns, by the CPU time of its thread each took: the longest delay one turn's "
           "work put on every other peer's heartbeats and requests.");
  w.Histogram("tailcut_loop_turn_cpu_seconds", s.loop_turn_cpu);
  RenderBounds(s.bounds, w);
  if (s.replica) RenderReplica(*s.replica, w);
  return w.str();
}

std::string RenderReplicaJson(const std::optional<ReplicaStatus>& r) {
  if (!r) return "{\"replica\":null}";
  std::ostringstream o;
  o << "{\"replica\":{\"id\":" << r->id << ",\"leading\":" << (r->leading ? "true" : "false")
    << ",\"leader_id\":" << r->leader_id << ",\"term\":" << r->term << ",\"applied_index\":" << r->applied_index
    << ",\"followers\":[";
  for (size_t i = 0; i < r->follower_lag.size(); ++i)
    o << (i ? "," : "") << "{\"id\":" << r->follower_lag[i].first << ",\"lag\":" << r->follower_lag[i].second << "}";
  o << "]}}";
  return o.str();
}

void SchedulerMetrics::OnJobFinished(const JobStatusInfo& job) {
  job_latency_.Observe(std::max(0.0, job.finished - job.submitted));
}

void SchedulerMetrics::OnJournalCommit(double seconds, bool ok) {
  journal_commit_.Observe(std::max(0.0, seconds));
  if (!ok) journal_commit_failures_++;
}

void SchedulerMetrics::MaybePublish(const SchedulerCore& core, Time now) {
  if (!wanted_.load(std::memory_order_acquire)) return;
  Snapshot collected = Collect(core, job_latency_);
  collected.journal_commit = journal_commit_;
  collected.journal_commit_failures = journal_commit_failures_;
  collected.loop_turn_cpu = loop_turn_cpu_;
  if (bounds_) collected.bounds = bounds_();
  if (replica_) collected.replica = replica_();
  if (dashboard_) collected.dashboard = std::make_shared<const dashboard::State>(dashboard_->Collect(core, now));
  auto snap = std::make_shared<const Snapshot>(std::move(collected));
  {
    MutexLock lock(mu_);
    latest_ = std::move(snap);
    ++generation_;
    wanted_.store(false, std::memory_order_release);
  }
  published_.NotifyAll();
}

std::shared_ptr<const Snapshot> SchedulerMetrics::Fresh(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  uint64_t want = generation_ + 1;
  wanted_.store(true, std::memory_order_release);
  published_.WaitFor(mu_, timeout, [&]() TC_REQUIRES(mu_) { return generation_ >= want; });
  return latest_;
}

}  // namespace tailcut::metrics
