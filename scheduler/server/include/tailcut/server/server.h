// The live driver: the scheduler daemon's ZeroMQ loop around SchedulerCore.
//
// One ROUTER socket for executors, one for clients (wire/proto/tailcut.proto
// is the contract). Single-threaded: it drains every message that is ready,
// feeds the core, ticks it, and sends the core's commands batched per peer.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tailcut/common/config.h"
#include "tailcut/common/status.h"
#include "tailcut/core/scheduler_core.h"

namespace tailcut {

// The edge tier (docs/EDGE.md, "Two tiers"): keys under [scheduler] that
// make this scheduler register with a parent scheduler as one executor.
struct ParentOptions {
  std::string endpoint;    // `parent`: the parent's executor endpoint; "" = none (a top-tier scheduler)
  std::string key_file;    // `parent_key_file`: this edge's key (role executor in the parent's trusted keys)
  std::string parent_key;  // `parent_key`: the parent's public key, a .pub file or Z85
  std::string name;        // `parent_name`: name registered with the parent; "" = "edge-HOST-PID"
  // `edge_quorum`: once this share (0..1] of a parent job's tasks held here
  // has committed, the edge closes its part and hands the rest back; 0 = off.
  double edge_quorum = 0;
  uint32_t max_tasks = 100000;  // `parent_max_tasks`: parent tasks held at once; more are refused
  uint32_t heartbeat_ms = 200;  // until the parent's RegisterAck names its own
};

// Replicas (docs/RELIABILITY.md, "Replicas"): three or five schedulers, each
// with its own state_dir, keep one journal through Raft; only the leader
// accepts, dispatches and commits, and the others answer with where it is.
// No peers: a single scheduler, nothing started (the embedded default).
// The daemon reads these from [replicas] (programs/tailcut-scheduler).
struct ReplicaPeerOptions {
  uint64_t id = 0;                // 1, 2, ...: unique in the group, never reused for another machine
  std::string raft_address;       // "ip:port" of its replica port (Raft traffic, keyed)
  std::string client_endpoint;    // where its clients connect: a follower's redirect names the leader's
  std::string executor_endpoint;  // where its executors connect
};
struct ReplicationOptions {
  uint64_t id = 0;                        // this replica: one of `peers`; it binds that peer's endpoints
  std::vector<ReplicaPeerOptions> peers;  // every voter, this one included; empty = a single scheduler
  std::string key_file;  // the replica key, 64 hex digits (32 bytes), the same on every replica; required
  std::string dir;       // Raft's log and snapshots; "" = state_dir/raft
  unsigned election_timeout_ms = 1000;  // a leader without a quorum for this long stops leading
  unsigned heartbeat_timeout_ms = 100;
  // The largest snapshot a replica takes from its leader (libraft sends the
  // leader's whole journal file in one message); a larger one is refused
  // and logged, so a replica can rejoin only while the journal is smaller.
  uint32_t max_snapshot_mib = 1024;
  unsigned snapshot_threshold = 1024;  // entries between snapshots (each copies the journal)
  unsigned snapshot_trailing = 128;    // entries kept behind a snapshot, for lagging followers
  bool enabled() const { return !peers.empty(); }
};

// A replicated leader holds each Work until the entry with its launch has
// committed (a round trip and an fsync on two replicas), so an executor
// given tiny tasks idles through every commit unless its queue covers that
// wait too (docs/RELIABILITY.md, "Executors' queues"): with replicas,
// core.pipeline_s gets this much more and core.max_queue_per_slot grows by
// the same factor (at most 4096).
inline constexpr double kCommitAllowanceS = 0.015;

// scheduler.trace_memory_rows at most: 16M rows x 88 bytes, ~1.5 GB plus
// class names.
inline constexpr uint32_t kMaxTraceMemoryRows = 16u << 20;

// Keys under [scheduler] in configs/scheduler.toml; defaults here.
struct ServerOptions {
  std::string executor_endpoint = "tcp://127.0.0.1:7700";  // executors connect here
  std::string client_endpoint = "tcp://127.0.0.1:7701";    // clients connect here
  // Keys (docs/SECURITY.md). With key_file every peer must hold a key in
  // trusted_keys (executors with role executor, clients client or admin),
  // and traffic is encrypted (CURVE). Without it both endpoints must be
  // local (loopback, ipc, inproc) unless `insecure`.
  std::string key_file;      // the scheduler's .key (tailcut keygen)
  std::string trusted_keys;  // allow-list of .pub entries; reloaded on SIGHUP
  bool insecure = false;     // listen beyond loopback without keys (warned at every start)
  // Prometheus metrics over HTTP at /metrics (docs/METRICS.md), "HOST:PORT"
  // (port 0: any free one). No authentication: without key_file it must be
  // loopback unless `insecure`. "" = none, the embedded default; the
  // daemon's config default is "127.0.0.1:7780".
  std::string http_listen;
  uint32_t heartbeat_ms = 200;                     // executors report this often
  // Heartbeats a second the whole fleet may send: a fleet larger than
  // heartbeat_rate * heartbeat_ms / 1000 is told a longer interval (and its
  // loss timeout grows alike). 0 = always heartbeat_ms.
  double heartbeat_rate = 5000;
  double tick_s = 0.01;                            // core Tick cadence
  CoreOptions core;                                // keys under [core]
  PredictorOptions predictor;                      // keys under [predictor]
  // The journal's folder (docs/RELIABILITY.md): jobs, commits and final
  // statuses survive a scheduler restart. "" = in memory only (embedded
  // schedulers, tests); the daemon's config default is "tailcut-state".
  std::string state_dir;
  // false ("normal"): a commit survives the scheduler being killed (the OS
  // holds it), not a power loss; true ("full"): fsync per group commit.
  bool journal_sync_full = false;
  // A loop turn that holds client replies for its group commit and sent
  // Work waits up to this long for an executor's Report before it commits,
  // so that a short task's result joins the accept's commit: a one-task job
  // pays one group commit, not two (docs/RELIABILITY.md, "Group commits").
  // The wait ends at the first executor or client frame; 0 = never wait.
  double commit_linger_s = 0.0005;
  // Attempt trace of this scheduler's runs (docs/WHATIF.md, format
  // docs/TRACE_FORMAT.md): one row per committed attempt, appended. "" = off
  // (the default). The file rotates to trace_path.1 at trace_max_mb, so at
  // most about twice that is on disk.
  std::string trace_path;
  uint32_t trace_max_mb = 64;
  // Trace rows held in memory for `tailcut trace JOB`: the newest this
  // many committed attempts of all jobs (88 bytes each on x86-64, plus
  // class names over 15 bytes). 0 = off.
  uint32_t trace_memory_rows = 65536;
  // Limits (docs/LIMITS.md); caps of 0 mean none.
  // ZMQ_MAXMSGSIZE of both sockets: a peer sending a larger frame is
  // disconnected by ZeroMQ. Replies larger than this become TOO_LARGE errors.
  uint32_t max_message_bytes = 64u << 20;
  uint32_t max_executors = 10000;           // registered executors; more: BUSY
  uint32_t max_jobs_per_owner = 1000;       // running jobs per owner; more: BUSY
  uint32_t max_watchers_per_client = 1000;  // watched running jobs per client; more: BUSY
  // Messages queued per connection, each way (ZMQ_SNDHWM, ZMQ_RCVHWM).
  // Outgoing ones beyond it wait in the scheduler, at most
  // client_backlog_bytes per client connection (0: dropped, as before);
  // a client whose waiting replies exceed that, or make no progress for
  // client_stall_s, is disconnected: they are dropped, its watches end,
  // and it is told why. Incoming ones wait in the peer's TCP buffers.
  // 0 = no limit.
  uint32_t client_hwm = 1000;
  uint32_t client_backlog_bytes = 8u << 20;
  double client_stall_s = 30;
  uint32_t executor_hwm = 100000;
  // Frames decoded off the loop (docs/LIMITS.md, "Decoding off the loop"):
  // a frame of at least decode_off_loop_bytes is parsed on a thread of its
  // own, so one peer's huge frame does not hold up others' heartbeats; at
  // most decode_queue_bytes of frames wait for it, beyond which the socket
  // is not read until there is room.
  uint32_t decode_off_loop_bytes = 64u << 10;
  uint32_t decode_queue_bytes = 64u << 20;
  // Connections (docs/LIMITS.md, "Connections"): a handshake unfinished
  // after handshake_timeout_ms is closed (0 = ZeroMQ's 30 s); at most
  // max_pending_connections unfinished at once, the oldest shut down past
  // it (0 = half the descriptor limit); the soft descriptor limit
  // is raised to max_descriptors (0 = to the hard limit).
  uint32_t handshake_timeout_ms = 5000;
  uint32_t max_pending_connections = 0;
  uint32_t max_descriptors = 0;
  ParentOptions parent;                     // the edge tier; empty endpoint = none
  ReplicationOptions replicas;              // [replicas]; no peers = a single scheduler
};
// The core options the scheduler runs with: o.core, and with replicas the
// executors' queues grown to cover the commit wait (kCommitAllowanceS; a
// pipeline_s of 0, no queueing, stays 0).
CoreOptions EffectiveCoreOptions(const ServerOptions& o);
// Reads the [scheduler] keys and checks them against out->core. [core] and
// [predictor] are read by LoadSchedulingConfig (tailcut/plugins/
// scheduling_config.h), the loader simulation scenarios share; the daemon
// uses both through LoadDaemonConfig (programs/tailcut-scheduler/daemon_config.h).
// Reads [scheduler] with the daemon's defaults (state_dir "tailcut-state").
Status LoadServerOptions(const Config& cfg, ServerOptions* out);
// The replicas' checks (none without peers): this replica among the
// peers, ids unique and not 0, every peer's Raft address and endpoints set,
// a key file and a state_dir, no edge tier (not replicated yet).
Status ValidateReplicationOptions(const ServerOptions& o);

class SchedulerServer {
 public:
  SchedulerServer(ServerOptions options, PolicyChain policies = {});
  ~SchedulerServer();

  // Binds both sockets; afterwards the endpoints name the real ports.
  Status Bind();
  // Serves until Stop() (thread-safe, signal-safe) is called, or until a
  // replica that led loses leadership (deposed()).
  void Run();
  void Stop();
  // Re-reads trusted_keys at the next loop turn (thread-safe, signal-safe:
  // the daemon calls it on SIGHUP). A bad file keeps the old list.
  void ReloadTrustedKeys();
  // Forwards the core's observer hook (attempt records, finished jobs), for
  // benchmarks and tracing. Call before Run(); callbacks run on Run()'s
  // thread, so the observer must synchronise its own readers.
  void AddObserver(CoreObserver* observer);
  std::string executor_endpoint() const;
  std::string client_endpoint() const;
  // "HOST:PORT" the metrics listener is bound to; "" without http_listen.
  std::string http_endpoint() const;
  // A replica that led and lost leadership (or could not commit): Run
  // returned, and the daemon exits so that it rejoins as a follower.
  bool deposed() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tailcut
