// LoadServerOptions: the [scheduler] keys (configs/scheduler.toml,
// docs/CONFIG.md) and their checks.
#include <set>
#include <string>

#include "http_server.h"
#include "tailcut/server/server.h"
#include "tailcut/wire/security.h"
#include "tailcut/wire/wire.h"

namespace tailcut {
namespace {
// Below this a Register or a small batch of results would not fit.
constexpr uint32_t kMinMessageBytes = 64 * 1024;
}  // namespace

Status LoadServerOptions(const Config& cfg, ServerOptions* o) {
  o->state_dir = "tailcut-state";
  o->http_listen = kHttpAvailable ? "127.0.0.1:7780" : "";  // a cross build may lack cpp-httplib
  std::string sync = o->journal_sync_full ? "full" : "normal";
  TableReader t(cfg, "scheduler");
  t.Get("executor_endpoint", &o->executor_endpoint)
      .Get("client_endpoint", &o->client_endpoint)
      .Get("http_listen", &o->http_listen)
      .Get("heartbeat_ms", &o->heartbeat_ms)
      .Get("heartbeat_rate", &o->heartbeat_rate)
      .Get("tick_s", &o->tick_s)
      .Get("state_dir", &o->state_dir)
      .Get("journal_sync", &sync)
      .Get("commit_linger_s", &o->commit_linger_s)
      .Get("trace_path", &o->trace_path)
      .Get("trace_max_mb", &o->trace_max_mb)
      .Get("trace_memory_rows", &o->trace_memory_rows)
      .Get("key_file", &o->key_file)
      .Get("trusted_keys", &o->trusted_keys)
      .Get("insecure", &o->insecure)
      .Get("max_message_bytes", &o->max_message_bytes)
      .Get("max_executors", &o->max_executors)
      .Get("max_jobs_per_owner", &o->max_jobs_per_owner)
      .Get("max_watchers_per_client", &o->max_watchers_per_client)
      .Get("client_hwm", &o->client_hwm)
      .Get("client_backlog_bytes", &o->client_backlog_bytes)
      .Get("client_stall_s", &o->client_stall_s)
      .Get("executor_hwm", &o->executor_hwm)
      .Get("decode_off_loop_bytes", &o->decode_off_loop_bytes)
      .Get("decode_queue_bytes", &o->decode_queue_bytes)
      .Get("handshake_timeout_ms", &o->handshake_timeout_ms)
      .Get("max_pending_connections", &o->max_pending_connections)
      .Get("max_descriptors", &o->max_descriptors)
      .Get("parent", &o->parent.endpoint)
      .Get("parent_key_file", &o->parent.key_file)
      .Get("parent_key", &o->parent.parent_key)
      .Get("parent_name", &o->parent.name)
      .Get("edge_quorum", &o->parent.edge_quorum)
      .Get("parent_max_tasks", &o->parent.max_tasks)
      .Check(o->max_message_bytes >= kMinMessageBytes,
             "max_message_bytes must be at least " + std::to_string(kMinMessageBytes))
      .Also(ValidateEndpoint(o->executor_endpoint))
      .Also(ValidateEndpoint(o->client_endpoint))
      .Check(o->heartbeat_ms > 0, "heartbeat_ms must be > 0")
      .Check(o->heartbeat_rate >= 0, "heartbeat_rate must be >= 0 (0 = no stretching)")
      .Check(o->tick_s > 0, "tick_s must be > 0")
      .Check(o->commit_linger_s >= 0 && o->commit_linger_s <= 0.1, "commit_linger_s must be in [0, 0.1]")
      .Check(o->client_stall_s > 0, "client_stall_s must be > 0")
      .Check(o->decode_queue_bytes > 0, "decode_queue_bytes must be > 0")
      .Check(o->max_descriptors == 0 || o->max_descriptors >= 64,
             "max_descriptors must be 0 (the hard limit) or at least 64")
      .Check(o->handshake_timeout_ms <= 600000, "handshake_timeout_ms must be at most 600000 (10 minutes)")
      .Check(o->trace_max_mb >= 1 && o->trace_max_mb <= 1024 * 1024, "trace_max_mb must be in [1, 1048576]")
      .Check(o->trace_memory_rows <= kMaxTraceMemoryRows,
             "trace_memory_rows must be in [0, " + std::to_string(kMaxTraceMemoryRows) + "]")
      .Check(sync == "full" || sync == "normal", "journal_sync must be \"full\" or \"normal\"")
      .Check(o->key_file.empty() == o->trusted_keys.empty(),
             "key_file and trusted_keys go together: the scheduler's key and the keys it admits")
      .Check(o->parent.edge_quorum >= 0 && o->parent.edge_quorum <= 1, "edge_quorum must be in [0, 1] (0 = off)")
      .Check(o->parent.max_tasks > 0, "parent_max_tasks must be > 0")
      .Check(o->parent.key_file.empty() == o->parent.parent_key.empty(),
             "parent_key_file and parent_key go together: this edge's key and the parent's public key");
  if (t.status().ok() && !o->parent.endpoint.empty()) t.Also(ValidateEndpoints(o->parent.endpoint));
  o->parent.heartbeat_ms = o->heartbeat_ms;
  o->journal_sync_full = sync == "full";
  if (!t.status().ok()) return t.status();
  if (!o->http_listen.empty()) {
    if (auto hp = ParseHttpListen(o->http_listen); !hp.ok()) return hp.status();
    if (!kHttpAvailable)
      return Status::InvalidArgument("http_listen: this scheduler was built without HTTP support (cpp-httplib)");
  }
  if (o->core.lost_after_s > 0 && o->core.lost_after_s * 1000 < 2.0 * o->heartbeat_ms)
    return Status::InvalidArgument("core.lost_after_s must allow at least two heartbeats");
  return Status::Ok();
}

Status ValidateReplicationOptions(const ServerOptions& o) {
  const ReplicationOptions& r = o.replicas;
  if (!r.enabled()) return Status::Ok();
  auto bad = [](const std::string& what) { return Status::InvalidArgument("replicas: " + what); };
  std::set<uint64_t> ids;
  std::set<std::string> addresses;
  for (const ReplicaPeerOptions& p : r.peers) {
    const std::string name = "peer " + std::to_string(p.id);
    if (p.id == 0) return bad("every peer needs an id of 1 or more");
    if (!ids.insert(p.id).second) return bad("two peers with id " + std::to_string(p.id));
    if (p.raft_address.empty() || p.client_endpoint.empty() || p.executor_endpoint.empty())
      return bad(name + " needs raft, client and executor (its Raft address and the endpoints it serves)");
    if (p.raft_address.rfind(':') == std::string::npos || p.raft_address.find("://") != std::string::npos)
      return bad(name + ": raft must be HOST:PORT (e.g. 10.0.0.1:7790), not " + p.raft_address);
    if (!addresses.insert(p.raft_address).second) return bad("two peers with raft address " + p.raft_address);
    if (Status s = ValidateEndpoint(p.client_endpoint); !s.ok()) return bad(name + ": " + s.message());
    if (Status s = ValidateEndpoint(p.executor_endpoint); !s.ok()) return bad(name + ": " + s.message());
  }
  if (!ids.count(r.id))
    return bad("this replica's id (--replica-id or replicas.id) " + std::to_string(r.id) + " is not one of the peers");
  if (r.key_file.empty()) return bad("key_file is required: the replica key, the same file on every replica");
  if (o.state_dir.empty()) return bad("a replica needs a state_dir for its journal");
  if (!o.parent.endpoint.empty()) return bad("an edge scheduler (scheduler.parent) cannot be replicated yet");
  if (r.election_timeout_ms < 2 * r.heartbeat_timeout_ms || r.heartbeat_timeout_ms == 0)
    return bad("election_timeout_ms must be at least twice heartbeat_timeout_ms (> 0)");
  if (r.max_snapshot_mib == 0) return bad("max_snapshot_mib must be 1 or more");
  return Status::Ok();
}

}  // namespace tailcut
