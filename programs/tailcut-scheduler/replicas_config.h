// The [replicas] table (docs/RELIABILITY.md, "Replicas"; docs/CONFIG.md):
// three or five schedulers, each with its own state_dir, keeping one
// journal through Raft. Either in the daemon's config, or in a file of its
// own (`--replicas FILE`, the same file on every replica) with the replica's
// id given apart (`--replica-id N`, key replicas.id):
//
//   [replicas]
//   key_file = "/etc/tailcut/replica.key"  # 64 hex digits: openssl rand -hex 32
//   # dir = "..."                          # Raft's log; default state_dir/raft
//   [[replicas.peers]]
//   id = 1
//   raft = "10.0.0.1:7790"                 # its replica port (keyed, Raft only)
//   client = "tcp://10.0.0.1:7701"         # the endpoints it serves: a follower
//   executor = "tcp://10.0.0.1:7700"       #   names the leader's in its redirect
//   ...
//
// Header-only, like daemon_config.h (the daemon, the config tests and the
// config fuzzer read it).
#pragma once

#include <string>

#include "tailcut/common/config.h"
#include "tailcut/server/server.h"

namespace tailcut {

// Reads [replicas] from `cfg` into *out (no table: nothing changes).
inline Status LoadReplicasTable(const Config& cfg, ReplicationOptions* out) {
  TableReader t(cfg, "replicas");
  int64_t id = static_cast<int64_t>(out->id);
  uint32_t election = out->election_timeout_ms, heartbeat = out->heartbeat_timeout_ms;
  t.Get("id", &id)
      .Get("key_file", &out->key_file)
      .Get("dir", &out->dir)
      .Get("election_timeout_ms", &election)
      .Get("heartbeat_timeout_ms", &heartbeat)
      .Get("max_snapshot_mib", &out->max_snapshot_mib)
      .Check(id >= 0, "id must be 1 or more");
  const size_t n = cfg.ArraySize("replicas.peers");
  t.Check(!t.Has("peers") || n > 0, "peers must be an array of tables, one [[replicas.peers]] per replica");
  for (size_t i = 0; i < n && t.status().ok(); ++i) {
    TableReader p(cfg, "replicas.peers." + std::to_string(i));
    ReplicaPeerOptions peer;
    int64_t pid = 0;
    p.Get("id", &pid)
        .Get("raft", &peer.raft_address)
        .Get("client", &peer.client_endpoint)
        .Get("executor", &peer.executor_endpoint)
        .Check(pid > 0, "id must be 1 or more");
    peer.id = static_cast<uint64_t>(pid);
    t.Also(p.status());
    out->peers.push_back(std::move(peer));
  }
  out->id = static_cast<uint64_t>(id);
  out->election_timeout_ms = election;
  out->heartbeat_timeout_ms = heartbeat;
  return t.status();
}

// The daemon's replicas: [replicas] in its config, or the [replicas] of
// `replicas_file` (the peers of the group; then the config may set only
// replicas.id), then the checks (ValidateReplicationOptions).
inline Status LoadReplicasConfig(const Config& cfg, const std::string& replicas_file, ServerOptions* out) {
  if (Status s = LoadReplicasTable(cfg, &out->replicas); !s.ok()) return s;
  const uint64_t id = out->replicas.id;  // --replica-id wins over the file's
  if (!replicas_file.empty()) {
    if (!out->replicas.peers.empty() || !out->replicas.key_file.empty())
      return Status::InvalidArgument("replicas: give the peers either in [replicas] or in --replicas " + replicas_file +
                                     ", not both");
    auto file = Config::LoadFile(replicas_file);
    if (!file.ok()) return file.status();
    if (Status s = LoadReplicasTable(*file, &out->replicas); !s.ok()) return s;
    if (Status s = file->CheckAllUsed(); !s.ok()) return s;
    if (out->replicas.peers.empty())
      return Status::InvalidArgument("replicas: " + replicas_file + " names no [[replicas.peers]]");
    if (cfg.Has("replicas.id")) out->replicas.id = id;
  }
  if (out->replicas.id != 0 && out->replicas.peers.empty())
    return Status::InvalidArgument("replicas: a replica id without peers (--replicas FILE or [[replicas.peers]])");
  return ValidateReplicationOptions(*out);
}

}  // namespace tailcut
