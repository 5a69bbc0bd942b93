#include "replica_group.h"

#include <pthread.h>
#include <uv.h>

#include <csignal>

#include <atomic>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>

#include "keyed_transport.h"
#include "tailcut/common/log.h"

namespace tailcut {

const char* ReplicaRoleName(ReplicaRole role) {
  switch (role) {
    case ReplicaRole::kFollower: return "follower";
    case ReplicaRole::kCandidate: return "candidate";
    case ReplicaRole::kLeader: return "leader";
    default: return "unavailable";
  }
}

namespace {
ReplicaRole RoleOf(int state) {
  switch (state) {
    case RAFT_FOLLOWER: return ReplicaRole::kFollower;
    case RAFT_CANDIDATE: return ReplicaRole::kCandidate;
    case RAFT_LEADER: return ReplicaRole::kLeader;
    default: return ReplicaRole::kUnavailable;
  }
}
constexpr unsigned kWatchMs = 10;   // how often the replica thread looks at its role
constexpr unsigned kFlushEvery = 10;  // watches between two Flushes of the state machine (100 ms)
constexpr size_t kLengthBytes = 8;  // an entry's length (LE) before it in its Raft buffer
}  // namespace

class ReplicaGroup::Impl {
 public:
  Impl(const ReplicaOptions& o, ReplicaStateMachine* m) : o_(o), machine_(m) {}

  ~Impl() {
    Stop();
    if (transport_.impl) KeyedTransportRelease(&transport_);
    if (loop_open_) uv_loop_close(&loop_);
  }

  Status Start() {
    const ReplicaPeer* self = nullptr;
    for (const ReplicaPeer& p : o_.peers) {
      if (p.id == 0 || p.address.empty()) return Status::InvalidArgument("replicas: a peer without id or address");
      if (p.id == o_.id) self = &p;
    }
    if (!self)
      return Status::InvalidArgument("replicas: this replica's id " + std::to_string(o_.id) + " is not a peer");
    if (o_.key.size() != kReplicaKeyBytes)
      return Status::InvalidArgument("replicas: the replica key must be " + std::to_string(kReplicaKeyBytes) +
                                     " bytes");
    std::error_code ec;
    std::filesystem::create_directories(o_.dir, ec);
    if (ec) return Status::IoError("replicas: cannot create " + o_.dir + ": " + ec.message());
    if (uv_loop_init(&loop_) != 0) return Status::Internal("replicas: uv_loop_init failed");
    loop_open_ = true;
    KeyedTransportOptions to;
    to.key = o_.key;
    to.bind_address = o_.bind_address;
    to.handshake_timeout_ms = o_.handshake_timeout_ms;
    to.on_refused = o_.on_refused;
    to.max_handshakes = o_.max_handshakes;
    to.limits.max_entries =
        o_.max_append_entries ? o_.max_append_entries : 64 * (uint64_t{o_.snapshot_threshold} + o_.snapshot_trailing);
    to.limits.max_entry_bytes = (kLengthBytes + o_.max_entry_bytes + 7) / 8 * 8;  // as Propose pads it
    to.limits.max_append_bytes = o_.max_append_bytes;
    to.limits.max_snapshot_bytes = o_.max_snapshot_bytes;
    to.term_jump_to_log = o_.term_jump_to_log;
    to.current_term = [this] { return static_cast<uint64_t>(raft_.current_term); };
    for (const ReplicaPeer& p : o_.peers)
      if (p.id != o_.id) to.members.push_back(p.id);
    if (KeyedTransportInit(&transport_, &loop_, to) != 0) return Status::Internal("replicas: transport init failed");
    if (int rv = raft_uv_init(&io_, &loop_, o_.dir.c_str(), &transport_); rv != 0)
      return Status::IoError(std::string("replicas: raft_uv_init on ") + o_.dir + ": " + io_.errmsg);
    io_open_ = true;
    fsm_.version = 2;
    fsm_.data = this;
    fsm_.apply = &Impl::FsmApply;
    fsm_.snapshot = &Impl::FsmSnapshot;
    fsm_.snapshot_finalize = &Impl::FsmSnapshotFinalize;
    fsm_.restore = &Impl::FsmRestore;
    if (int rv = raft_init(&raft_, &io_, &fsm_, o_.id, self->address.c_str()); rv != 0)
      return Status::Internal(std::string("replicas: raft_init: ") + raft_errmsg(&raft_));
    raft_.data = this;
    raft_open_ = true;
    raft_set_election_timeout(&raft_, o_.election_timeout_ms);
    raft_set_heartbeat_timeout(&raft_, o_.heartbeat_timeout_ms);
    raft_set_snapshot_threshold(&raft_, o_.snapshot_threshold);
    raft_set_snapshot_trailing(&raft_, o_.snapshot_trailing);
    raft_set_pre_vote(&raft_, true);  // a replica cut off and back does not depose a working leader
    raft_configuration conf;
    raft_configuration_init(&conf);
    for (const ReplicaPeer& p : o_.peers) raft_configuration_add(&conf, p.id, p.address.c_str(), RAFT_VOTER);
    int rv = raft_bootstrap(&raft_, &conf);
    raft_configuration_close(&conf);
    if (rv != 0 && rv != RAFT_CANTBOOTSTRAP)  // CANTBOOTSTRAP: the directory has state already
      return Status::IoError(std::string("replicas: bootstrap: ") + raft_errmsg(&raft_));
    if (raft_start(&raft_) != 0) return Status::IoError(std::string("replicas: start: ") + raft_errmsg(&raft_));
    uv_async_init(&loop_, &async_, &Impl::OnAsync);
    async_.data = this;
    uv_timer_init(&loop_, &watch_);
    watch_.data = this;
    uv_timer_start(&watch_, &Impl::OnWatch, 0, kWatchMs);
    handles_open_ = true;
    thread_ = std::thread([this] {
      // A peer that went away makes a write raise SIGPIPE in this thread:
      // blocked here, the write fails with EPIPE instead and libraft
      // reconnects; the process's own handling is left alone.
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
      uv_run(&loop_, UV_RUN_DEFAULT);
    });
    return Status::Ok();
  }

  void Stop() {
    if (thread_.joinable()) {
      {
        std::lock_guard<std::mutex> l(mu_);
        stopping_ = true;
      }
      uv_async_send(&async_);
      thread_.join();
    } else if (raft_open_) {
      // Started no thread (Start failed after raft_init): close on this one.
      raft_close(&raft_, &Impl::OnRaftClosed);
      uv_run(&loop_, UV_RUN_DEFAULT);
    }
    raft_open_ = false;
    leader_ = false;
  }

  Status Propose(std::string entry, uint64_t tag, bool barrier = false) {
    if (entry.size() > o_.max_entry_bytes)
      return Status::TooLarge("replicas: an entry of " + std::to_string(entry.size()) + " bytes");
    if (!leader_) return Status::Unavailable("replicas: not the leader");
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopping_ || !thread_.joinable()) return Status::Unavailable("replicas: stopped");
      if (in_flight_ >= o_.max_in_flight)
        return Status::ResourceExhausted("replicas: " + std::to_string(in_flight_) + " entries in flight");
      in_flight_++;
      inbox_.push_back(Proposal{std::move(entry), tag, term_.load(), barrier});
      // Under the lock: once stopping_ is set no send follows, so none
      // races the handle's close on the replica thread.
      uv_async_send(&async_);
    }
    return Status::Ok();
  }

  void Poll(std::vector<ReplicaEvent>* out) {
    std::lock_guard<std::mutex> l(mu_);
    for (ReplicaEvent& e : outbox_) out->push_back(std::move(e));
    outbox_.clear();
  }

  bool is_leader() const { return leader_; }
  uint64_t term() const { return term_; }
  uint64_t applied_index() const { return applied_index_; }
  std::vector<std::pair<uint64_t, uint64_t>> follower_lag() const {
    std::lock_guard<std::mutex> l(mu_);
    return lag_;
  }

 private:
  struct Proposal {
    std::string entry;
    uint64_t tag;
    uint64_t term;
    bool barrier;  // a raft_barrier, no entry
  };
  struct Apply {
    struct raft_apply req {};
    Impl* impl = nullptr;
    uint64_t tag = 0;
  };
  struct BarrierReq {
    struct raft_barrier req {};
    Impl* impl = nullptr;
    uint64_t tag = 0;
  };

  void Emit(ReplicaEvent e) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (e.kind != ReplicaEvent::Kind::kRole) in_flight_--;
      outbox_.push_back(std::move(e));
    }
    if (o_.wake) o_.wake();
  }
  void Fail(uint64_t tag, Status s) {
    ReplicaEvent e;
    e.kind = ReplicaEvent::Kind::kFailed;
    e.tag = tag;
    e.status = std::move(s);
    Emit(std::move(e));
  }

  // --- the replica thread
  static void OnAsync(uv_async_t* a) {
    Impl* self = static_cast<Impl*>(a->data);
    std::deque<Proposal> batch;
    bool stop;
    {
      std::lock_guard<std::mutex> l(self->mu_);
      batch.swap(self->inbox_);
      stop = self->stopping_;
    }
    for (Proposal& p : batch) self->Submit(&p, stop);
    if (stop && !self->closing_) {
      self->closing_ = true;
      self->leader_ = false;
      uv_timer_stop(&self->watch_);
      raft_close(&self->raft_, &Impl::OnRaftClosed);
    }
  }

  void Submit(Proposal* p, bool stop) {
    if (stop || closing_) return Fail(p->tag, Status::Unavailable("replicas: stopping"));
    // The fence: only in the term the caller saw this replica lead.
    if (raft_state(&raft_) != RAFT_LEADER || raft_.current_term != p->term)
      return Fail(p->tag, Status::Unavailable("replicas: leadership of term " + std::to_string(p->term) +
                                              " lost (term " + std::to_string(raft_.current_term) + ")"));
    if (p->barrier) {
      auto* b = new BarrierReq;
      b->impl = this;
      b->tag = p->tag;
      b->req.data = b;
      if (int rv = raft_barrier(&raft_, &b->req, &Impl::OnBarrier); rv != 0) {
        delete b;
        return Fail(p->tag, Status::Unavailable(std::string("replicas: barrier: ") + raft_strerror(rv)));
      }
      return;
    }
    // The entry's own length first, then the entry, zero-padded to a
    // multiple of 8 bytes: libraft's batches need it (a follower decodes an
    // unpadded entry at shifted offsets).
    raft_buffer buf;
    buf.len = (kLengthBytes + p->entry.size() + 7) / 8 * 8;
    buf.base = raft_calloc(1, buf.len);
    if (!buf.base) return Fail(p->tag, Status::ResourceExhausted("replicas: out of memory"));
    auto* b = static_cast<unsigned char*>(buf.base);
    for (size_t i = 0; i < kLengthBytes; ++i) b[i] = static_cast<unsigned char>(p->entry.size() >> (8 * i));
    std::memcpy(b + kLengthBytes, p->entry.data(), p->entry.size());
    auto* a = new Apply;
    a->impl = this;
    a->tag = p->tag;
    a->req.data = a;
    if (int rv = raft_apply(&raft_, &a->req, &buf, 1, &Impl::OnApplied); rv != 0) {
      raft_free(buf.base);
      delete a;
      return Fail(p->tag, Status::Unavailable(std::string("replicas: ") + raft_strerror(rv)));
    }
  }

  static void OnApplied(struct raft_apply* req, int status, void* result) {
    auto* a = static_cast<Apply*>(req->data);
    Impl* self = a->impl;
    if (status == 0 && result == nullptr) {
      ReplicaEvent e;
      e.kind = ReplicaEvent::Kind::kCommitted;
      e.tag = a->tag;
      self->Emit(std::move(e));
    } else {
      self->Fail(a->tag, Status::Unavailable(std::string("replicas: ") +
                                             (status ? raft_strerror(status) : "applying the entry failed")));
    }
    delete a;
  }

  static void OnBarrier(struct raft_barrier* req, int status) {
    auto* b = static_cast<BarrierReq*>(req->data);
    if (status == 0) {
      ReplicaEvent e;
      e.kind = ReplicaEvent::Kind::kCommitted;
      e.tag = b->tag;
      b->impl->Emit(std::move(e));
    } else {
      b->impl->Fail(b->tag, Status::Unavailable(std::string("replicas: barrier: ") + raft_strerror(status)));
    }
    delete b;
  }

  static void OnWatch(uv_timer_t* t) {
    Impl* self = static_cast<Impl*>(t->data);
    raft* r = &self->raft_;
    ReplicaRole role = RoleOf(raft_state(r));
    raft_id leader = 0;
    const char* address = nullptr;
    raft_leader(r, &leader, &address);
    self->term_ = r->current_term;  // before leader_: a Propose that sees it lead sees its term
    self->leader_ = role == ReplicaRole::kLeader;
    self->applied_index_ = raft_last_applied(r);
    if (++self->watches_ % kFlushEvery == 0) self->FlushMachine();
    self->WatchLag(r, role);
    if (role == self->role_ && r->current_term == self->seen_term_ && leader == self->seen_leader_) return;
    self->role_ = role;
    self->seen_term_ = r->current_term;
    self->seen_leader_ = leader;
    ReplicaEvent e;
    e.kind = ReplicaEvent::Kind::kRole;
    e.role = role;
    e.term = r->current_term;
    e.leader_id = leader;
    e.leader_address = address ? address : "";
    TC_LOG(Info) << "replica " << self->o_.id << ": " << ReplicaRoleName(role) << " in term " << e.term
                 << (leader ? ", leader " + std::to_string(leader) + " at " + e.leader_address : ", no leader");
    self->Emit(std::move(e));
  }

  void FlushMachine() {
    Status s = machine_->Flush();
    // As an entry that cannot be applied: this replica's journal differs from here on.
    if (!s.ok()) TC_LOG(Error) << "replica " << o_.id << ": committing applied entries: " << s.message();
  }

  // The leader's view of its followers, for /metrics (follower_lag).
  void WatchLag(raft* r, ReplicaRole role) {
    std::vector<std::pair<uint64_t, uint64_t>> lag;
    if (role == ReplicaRole::kLeader && r->leader_state.progress) {
      const raft_index applied = raft_last_applied(r);
      for (unsigned i = 0; i < r->configuration.n; ++i) {
        const raft_server& s = r->configuration.servers[i];
        if (s.id == r->id || s.role != RAFT_VOTER) continue;
        const raft_index match = r->leader_state.progress[i].match_index;
        lag.emplace_back(s.id, applied > match ? applied - match : 0);
      }
    }
    std::lock_guard<std::mutex> l(mu_);
    lag_ = std::move(lag);
  }

  static void OnRaftClosed(raft* r) {
    Impl* self = static_cast<Impl*>(r->data);
    self->FlushMachine();
    raft_uv_close(&self->io_);
    self->io_open_ = false;
    if (self->handles_open_) {
      uv_close(reinterpret_cast<uv_handle_t*>(&self->async_), nullptr);
      uv_close(reinterpret_cast<uv_handle_t*>(&self->watch_), nullptr);
    }
    // Proposals that raced the stop.
    std::deque<Proposal> rest;
    {
      std::lock_guard<std::mutex> l(self->mu_);
      rest.swap(self->inbox_);
    }
    for (Proposal& p : rest) self->Fail(p.tag, Status::Unavailable("replicas: stopped"));
  }

  static int FsmApply(raft_fsm* fsm, const raft_buffer* buf, void** result) {
    Impl* self = static_cast<Impl*>(fsm->data);
    const auto* b = static_cast<const unsigned char*>(buf->base);
    uint64_t len = 0;
    for (size_t i = 0; i < kLengthBytes && i < buf->len; ++i) len |= static_cast<uint64_t>(b[i]) << (8 * i);
    Status s = buf->len < kLengthBytes || len > buf->len - kLengthBytes
                   ? Status::InvalidArgument("an entry shorter than its length")
                   : self->machine_->Apply(std::string_view(reinterpret_cast<const char*>(b) + kLengthBytes, len));
    // An entry is committed once a quorum has it: a replica that cannot
    // apply one has a state that differs from the others' from here on.
    if (!s.ok()) TC_LOG(Error) << "replica " << self->o_.id << ": applying a committed entry: " << s.message();
    self->applied_index_ = raft_last_applied(&self->raft_) + 1;  // this entry's (libraft counts it after)
    *result = s.ok() ? nullptr : self;
    return 0;
  }

  static int FsmSnapshot(raft_fsm* fsm, raft_buffer* bufs[], unsigned* n) {
    Impl* self = static_cast<Impl*>(fsm->data);
    auto* copy = new std::string;
    if (Status s = self->machine_->Snapshot(copy); !s.ok()) {
      TC_LOG(Warn) << "replica " << self->o_.id << ": no snapshot: " << s.message();
      delete copy;
      return RAFT_IOERR;
    }
    auto* b = static_cast<raft_buffer*>(raft_malloc(sizeof(raft_buffer)));
    b->base = copy->data();
    b->len = copy->size();
    self->snapshot_ = copy;
    *bufs = b;
    *n = 1;
    return 0;
  }

  static int FsmSnapshotFinalize(raft_fsm* fsm, raft_buffer* bufs[], unsigned* n) {
    Impl* self = static_cast<Impl*>(fsm->data);
    delete self->snapshot_;
    self->snapshot_ = nullptr;
    raft_free(*bufs);
    *bufs = nullptr;
    *n = 0;
    return 0;
  }

  static int FsmRestore(raft_fsm* fsm, raft_buffer* buf) {
    Impl* self = static_cast<Impl*>(fsm->data);
    Status s = self->machine_->Restore(std::string_view(static_cast<const char*>(buf->base), buf->len));
    if (!s.ok()) {  // the buffer stays libraft's
      TC_LOG(Error) << "replica " << self->o_.id << ": restoring a snapshot: " << s.message();
      return RAFT_IOERR;
    }
    TC_LOG(Info) << "replica " << self->o_.id << ": restored a snapshot of " << buf->len << " bytes";
    raft_free(buf->base);  // ours once restored (libraft's contract)
    return 0;
  }

  ReplicaOptions o_;
  ReplicaStateMachine* machine_;
  uv_loop_t loop_{};
  bool loop_open_ = false, io_open_ = false, raft_open_ = false, handles_open_ = false, closing_ = false;
  raft_uv_transport transport_{};
  raft_io io_{};
  raft_fsm fsm_{};
  raft raft_{};
  uv_async_t async_{};
  uv_timer_t watch_{};
  std::thread thread_;
  std::string* snapshot_ = nullptr;  // the one in progress (the replica thread)
  uint64_t watches_ = 0;             // OnWatch calls so far
  ReplicaRole role_ = ReplicaRole::kUnavailable;
  uint64_t seen_term_ = 0, seen_leader_ = 0;
  std::atomic<bool> leader_{false};
  std::atomic<uint64_t> term_{0};
  std::atomic<uint64_t> applied_index_{0};

  mutable std::mutex mu_;
  std::deque<Proposal> inbox_;
  std::vector<std::pair<uint64_t, uint64_t>> lag_;  // follower_lag(), set by the watch timer
  std::vector<ReplicaEvent> outbox_;
  size_t in_flight_ = 0;
  bool stopping_ = false;
};

StatusOr<std::unique_ptr<ReplicaGroup>> ReplicaGroup::Start(const ReplicaOptions& options,
                                                            ReplicaStateMachine* machine) {
  auto impl = std::make_unique<Impl>(options, machine);
  if (Status s = impl->Start(); !s.ok()) return s;
  return std::unique_ptr<ReplicaGroup>(new ReplicaGroup(std::move(impl)));
}
ReplicaGroup::ReplicaGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ReplicaGroup::~ReplicaGroup() = default;
Status ReplicaGroup::Propose(std::string entry, uint64_t tag) { return impl_->Propose(std::move(entry), tag); }
Status ReplicaGroup::Barrier(uint64_t tag) { return impl_->Propose({}, tag, /*barrier=*/true); }
void ReplicaGroup::Poll(std::vector<ReplicaEvent>* out) { impl_->Poll(out); }
bool ReplicaGroup::is_leader() const { return impl_->is_leader(); }
uint64_t ReplicaGroup::term() const { return impl_->term(); }
uint64_t ReplicaGroup::applied_index() const { return impl_->applied_index(); }
std::vector<std::pair<uint64_t, uint64_t>> ReplicaGroup::follower_lag() const { return impl_->follower_lag(); }
void ReplicaGroup::Stop() { impl_->Stop(); }

}  // namespace tailcut
