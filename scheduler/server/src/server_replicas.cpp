// A replicated scheduler's side of the loop (server_replicas.h;
// docs/RELIABILITY.md, "Replicas").
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "server_impl.h"
#include "tailcut/common/log.h"
#include "tailcut/wire/wire.h"

namespace tailcut {
namespace server_detail {

Replication::~Replication() {
  if (group) group->Stop();  // the replica thread writes to wake_fd: it ends first
  group.reset();
  machine.reset();
  if (wake_fd >= 0) close(wake_fd);
}

StatusOr<std::string> ReadReplicaKey(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument("replicas.key_file " + path + " cannot be read");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string hex;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) hex.push_back(c);
  auto nibble = [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10;
  };
  bool ok = hex.size() == 64;
  for (char c : hex) ok = ok && std::isxdigit(static_cast<unsigned char>(c));
  if (!ok)
    return Status::InvalidArgument("replicas.key_file " + path +
                                   " must hold the replica key as 64 hex digits (e.g. `openssl rand -hex 32`)");
  std::string key;
  for (size_t i = 0; i < hex.size(); i += 2) key.push_back(static_cast<char>(nibble(hex[i]) * 16 + nibble(hex[i + 1])));
  return key;
}

}  // namespace server_detail

CoreOptions EffectiveCoreOptions(const ServerOptions& o) {
  CoreOptions c = o.core;
  if (!o.replicas.enabled() || c.pipeline_s <= 0) return c;
  const double grown = (c.pipeline_s + kCommitAllowanceS) / c.pipeline_s;
  c.pipeline_s += kCommitAllowanceS;
  c.max_queue_per_slot = static_cast<uint32_t>(std::min(4096.0, c.max_queue_per_slot * grown));
  return c;
}

using server_detail::Replication;
using State = Replication::State;

Status SchedulerServer::Impl::StartReplicas() {
  if (Status s = ValidateReplicationOptions(opt_); !s.ok()) return s;
  const ReplicationOptions& ro = opt_.replicas;
  auto r = std::make_unique<Replication>();
  r->id = ro.id;
  r->peers = ro.peers;
  for (const ReplicaPeerOptions& p : ro.peers) {
    if (p.id != ro.id) continue;  // this replica binds its own entry's endpoints
    if (!p.client_endpoint.empty()) opt_.client_endpoint = p.client_endpoint;
    if (!p.executor_endpoint.empty()) opt_.executor_endpoint = p.executor_endpoint;
  }
  auto key = server_detail::ReadReplicaKey(ro.key_file);
  if (!key.ok()) return key.status();
  std::error_code ec;
  std::filesystem::create_directories(opt_.state_dir, ec);
  if (ec) return Status::IoError("cannot create state_dir " + opt_.state_dir + ": " + ec.message());
  const std::string raft_dir = ro.dir.empty() ? opt_.state_dir + "/raft" : ro.dir;
  const std::string journal = opt_.state_dir + "/journal.db";
  // A replica restarted on its own disk: libraft restores its last snapshot
  // (the whole journal) and applies every entry after it again, so the
  // journal starts over from them. Applied on top of the old journal, the
  // entries would be applied twice: a job accepted twice is refused, and
  // the rest of that entry lost (the takeover soak found it).
  if (std::filesystem::exists(raft_dir, ec) && !std::filesystem::is_empty(raft_dir, ec)) {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(journal + suffix, ec);
    TC_LOG(Info) << "replica " << ro.id << ": the journal is rebuilt from Raft's snapshot and log in " << raft_dir;
  }
  auto machine = JournalStateMachine::Open(JournalOptions{journal, opt_.journal_sync_full});
  if (!machine.ok()) return machine.status();
  r->machine = std::move(machine).value();
  r->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (r->wake_fd < 0) return Status::IoError("replicas: eventfd failed");
  ReplicaOptions o;
  o.id = ro.id;
  for (const ReplicaPeerOptions& p : ro.peers) o.peers.push_back({p.id, p.raft_address});
  o.dir = raft_dir;
  o.key = std::move(key).value();
  o.election_timeout_ms = ro.election_timeout_ms;
  o.heartbeat_timeout_ms = ro.heartbeat_timeout_ms;
  o.max_snapshot_bytes = uint64_t{ro.max_snapshot_mib} << 20;
  o.snapshot_threshold = ro.snapshot_threshold;
  o.snapshot_trailing = ro.snapshot_trailing;
  o.wake = [fd = r->wake_fd] {
    uint64_t one = 1;
    (void)!write(fd, &one, sizeof one);
  };
  auto group = ReplicaGroup::Start(o, r->machine.get());
  if (!group.ok()) return group.status();
  r->group = std::move(group).value();
  TC_LOG(Info) << "replica " << ro.id << " of " << ro.peers.size() << " (Raft in " << o.dir
               << "): following until elected";
  replicas_ = std::move(r);
  return Status::Ok();
}

void SchedulerServer::Impl::OnReplicaEvents() {
  Replication& r = *replicas_;
  uint64_t n = 0;
  (void)!read(r.wake_fd, &n, sizeof n);
  r.events.clear();
  r.group->Poll(&r.events);
  for (ReplicaEvent& e : r.events) {
    switch (e.kind) {
      case ReplicaEvent::Kind::kRole: {
        r.term = e.term;
        r.leader_id = e.leader_id;
        const bool leads = e.role == ReplicaRole::kLeader;
        if (r.state == State::kLeading && (!leads || e.term != r.lead_term)) {
          Depose("leadership of term " + std::to_string(r.lead_term) + " lost (" + ReplicaRoleName(e.role) +
                 " in term " + std::to_string(e.term) + ")");
        } else if (r.state == State::kTakingOver && (!leads || e.term != r.lead_term)) {
          r.state = State::kFollowing;  // elected and deposed before the barrier: nothing was done
        } else if (r.state == State::kFollowing && leads) {
          // Entries of earlier terms may not be applied here yet: the
          // barrier's commit says they are (raft_barrier).
          r.lead_term = e.term;
          r.barrier_tag = r.next_tag++;
          if (r.group->Barrier(r.barrier_tag).ok()) r.state = State::kTakingOver;
        }
        break;
      }
      case ReplicaEvent::Kind::kCommitted:
        if (r.state == State::kTakingOver && e.tag == r.barrier_tag) {
          TakeOver();
        } else if (r.state == State::kLeading) {
          // Entries commit in order: every turn up to this one is durable.
          const double now = clock_.Now();
          if (!r.in_flight.empty() && r.in_flight.front().tag <= e.tag &&
              now - r.in_flight.front().proposed_at > Replication::kSlowCommitS && now - r.last_slow_log >= 1) {
            r.last_slow_log = now;
            TC_LOG(Warn) << "replica " << r.id << ": a group commit took " << now - r.in_flight.front().proposed_at
                         << " s (term " << r.lead_term << ")";
          }
          while (!r.in_flight.empty() && r.in_flight.front().tag <= e.tag) {
            Release(r.in_flight.front().held);
            r.in_flight.pop_front();
          }
        }
        break;
      case ReplicaEvent::Kind::kFailed:
        if (r.state == State::kTakingOver && e.tag == r.barrier_tag)
          r.state = State::kFollowing;
        else if (r.state == State::kLeading && e.tag != r.barrier_tag)
          Depose("group commit " + std::to_string(e.tag) + " failed: " + e.status.message());
        break;
    }
  }
}

// Every entry of earlier terms is applied to this replica's journal: read
// a copy of it (the journal file is the replica thread's) as a restarted
// scheduler reads its own, then lead.
void SchedulerServer::Impl::TakeOver() {
  Replication& r = *replicas_;
  const std::string copy = opt_.state_dir + "/journal.takeover.db";
  StatusOr<RecoveryStats> rec = Status::Internal("not recovered");
  if (Status s = r.machine->CopyTo(copy); !s.ok()) {
    rec = s;
  } else if (auto j = Journal::Open(JournalOptions{copy, false}); !j.ok()) {
    rec = j.status();
  } else {
    rec = durability_.Takeover(**j, &r.batch, core_, clock_, &JobDefFromJournal, opt_.core.job_retention);
  }
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(copy + suffix, ec);
  if (!rec.ok()) return Depose("cannot take over: " + rec.status().message());
  AdmitRecoveredJobs();
  r.state = State::kLeading;
  r.last_proposal = clock_.Now();
  TC_LOG(Info) << "replica " << r.id << " leads in term " << r.lead_term << ": run " << rec->epoch << ", "
               << rec->resumed << " jobs resumed (" << rec->commits << " committed tasks kept, " << rec->launches
               << " attempts that only their executor's identity may adopt), " << rec->finished << " finished jobs";
  NoteStall();  // recovery held the loop: not the executors' fault
}

metrics::ReplicaStatus SchedulerServer::Impl::CollectReplica() const {
  const Replication& r = *replicas_;
  metrics::ReplicaStatus m;
  m.id = r.id;
  m.leader_id = r.leader_id;
  m.leading = r.state == State::kLeading;
  m.term = r.term;
  m.applied_index = r.group->applied_index();
  m.follower_lag = r.group->follower_lag();
  return m;
}

// Stops at once: nothing held is sent, nothing more is proposed, and the
// loop ends (its core ran ahead of the journal and cannot follow).
void SchedulerServer::Impl::Depose(const std::string& why) {
  Replication& r = *replicas_;
  if (r.state == State::kDeposed) return;
  size_t held = r.current.size();
  for (const auto& t : r.in_flight) held += t.held.size();
  TC_LOG(Error) << "replica " << r.id << " stops leading: " << why << "; " << held
                << " held messages dropped (clients resend with their request keys); exiting to rejoin as a follower";
  r.state = State::kDeposed;
  r.current.clear();
  r.in_flight.clear();
  stop_.store(true);
}

void SchedulerServer::Impl::Release(std::vector<Replication::Held>& held) {
  for (Replication::Held& h : held) SendFrame(h.to_client ? clients_ : executors_, h.route, std::move(h.frame));
  held.clear();
}

void SchedulerServer::Impl::SendNotLeader(bool to_client, const std::string& route, uint64_t request_id) {
  const Replication& r = *replicas_;
  std::string message = "scheduler replica " + std::to_string(r.id) + " does not lead", leader;
  for (const ReplicaPeerOptions& p : r.peers)
    if (p.id == r.leader_id && p.id != r.id) leader = to_client ? p.client_endpoint : p.executor_endpoint;
  if (r.state == State::kTakingOver)
    message += " yet: it is taking over (term " + std::to_string(r.lead_term) + "); retry";
  else if (!leader.empty())
    message += "; the leader is replica " + std::to_string(r.leader_id) + " at " + leader + " (term " +
               std::to_string(r.term) + ")";
  else
    message += "; no leader is known yet (term " + std::to_string(r.term) + "); retry";
  wire::Error error = MakeError(wire::Error::NOT_LEADER, std::move(message));
  if (r.state != State::kTakingOver) error.set_leader_endpoint(leader);
  if (to_client) {
    wire::ClientReply out;
    out.set_version(kProtocolVersion);
    out.set_request_id(request_id);
    *out.mutable_error() = std::move(error);
    return SendClient(route, out);
  }
  wire::SchedulerToExecutor out;
  out.set_version(kProtocolVersion);
  *out.mutable_error() = std::move(error);
  Send(executors_, route, out);
}

bool SchedulerServer::Impl::HoldForReplicas(bool to_client, const std::string& route,
                                            const google::protobuf::MessageLite& msg) {
  Replication& r = *replicas_;
  if (r.state == State::kDeposed) return true;  // dropped: a deposed leader says nothing more
  if (r.state != State::kLeading || (r.batch.empty() && r.current.empty() && r.in_flight.empty())) return false;
  r.current.push_back({to_client, route, ToFrame(msg)});
  return true;
}

// The turn's group commit: its journal writes as one entry. The messages
// it held go out when that entry commits; a turn that wrote nothing sends
// its messages after those of the turns before it.
void SchedulerServer::Impl::ProposeTurn(bool force) {
  Replication& r = *replicas_;
  if (r.state != State::kLeading) return;
  if (r.batch.empty()) {
    if (r.in_flight.empty())
      Release(r.current);
    else
      for (Replication::Held& h : r.current) r.in_flight.back().held.push_back(std::move(h));
    r.current.clear();
    return;
  }
  const double now = clock_.Now();
  if (!force && r.current.empty() && now - r.last_proposal < Replication::kBackgroundProposeS) return;
  if (r.in_flight.size() >= Replication::kMaxTurnsInFlight) return;  // more writes join this entry meanwhile
  const uint64_t tag = r.next_tag++;
  const size_t bytes = r.batch.bytes().size();
  if (Status s = r.group->Propose(r.batch.Take(), tag); !s.ok())
    return Depose("a group commit of " + std::to_string(bytes) + " bytes was not proposed: " + s.message());
  r.in_flight.push_back({tag, std::move(r.current), now});
  r.current.clear();
  r.last_proposal = now;
}

}  // namespace tailcut
