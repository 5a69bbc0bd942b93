// SchedulerServer (server_impl.h): the set-up (journal, keys, sockets,
// parent link, HTTP), the loop, and sending. The executor side, the client
// side and the dispatch of the core's commands are server_executors.cpp,
// server_clients.cpp and server_dispatch.cpp; the options are read in
// server_options.cpp.
#include "tailcut/server/server.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>

#include "server_impl.h"
#include "tailcut/common/log.h"
#include "web_assets.h"
#include "tailcut/wire/wire.h"

namespace tailcut {
namespace {

// How long closing sockets at shutdown may wait for the last replies.
constexpr int kShutdownLingerMs = 1000;

int Hwm(uint32_t messages) { return static_cast<int>(std::min<uint32_t>(messages, INT32_MAX)); }

}  // namespace

Status SchedulerServer::Impl::Bind() {
  // Replicas recover when they take over (server_replicas.cpp).
  if (opt_.replicas.enabled()) {
    if (Status s = StartReplicas(); !s.ok()) return s;
  } else {
    if (Status s = durability_.Open(opt_.state_dir, opt_.journal_sync_full, core_, clock_, &JobDefFromJournal,
                                    opt_.core.job_retention);
        !s.ok())
      return s;
    AdmitRecoveredJobs();
  }
  last_iteration_ = clock_.Now();  // a slow start after recovery is a stall as well (Run, NoteStall)
  if (Status s = SetUpKeys(); !s.ok()) return s;
  if (!opt_.trace_path.empty()) {  // after recovery: replayed attempts are not traced again
    auto t = TraceRecorder::Open({opt_.trace_path, uint64_t{opt_.trace_max_mb} << 20});
    if (!t.ok()) return t.status();
    trace_ = std::move(t).value();
    core_.AddObserver(trace_.get());
    TC_LOG(Info) << "recording the attempt trace to " << opt_.trace_path;
  }
  if (recent_trace_.capacity() > 0) core_.AddObserver(&recent_trace_);
  try {
    for (zmq::socket_t* s : {&executors_, &clients_}) {
      s->set(zmq::sockopt::linger, 0);
      s->set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(opt_.max_message_bytes));
    }
    // Finite queues per peer (docs/LIMITS.md). A client that does not
    // read has replies beyond client_hwm held back, up to
    // client_backlog_bytes, then is disconnected (SendToClient). An
    // executor queue only fills when it has not read for minutes: its
    // attempts are lost then.
    clients_.set(zmq::sockopt::sndhwm, Hwm(opt_.client_hwm));
    // A full client queue says so (EAGAIN) instead of dropping: the reply
    // waits in the scheduler (SendToClient).
    clients_.set(zmq::sockopt::router_mandatory, 1);
    clients_.set(zmq::sockopt::rcvhwm, Hwm(opt_.client_hwm));
    executors_.set(zmq::sockopt::sndhwm, Hwm(opt_.executor_hwm));
    executors_.set(zmq::sockopt::rcvhwm, Hwm(opt_.executor_hwm));
    // An executor that reconnects (a reset only it saw) takes its routing
    // id over from the stale connection; TCP keepalive closes dead ones.
    // Not ZMTP heartbeats: libzmq 4.3 keeps every connection's heartbeat
    // timers in one ordered map per I/O thread and cancels one by a linear
    // scan of it, once per PING answered, so at 10,000 executors the I/O
    // thread spent most of its time walking that map and never caught up
    // (docs/SCALE.md). Keepalive probes are the kernel's: nothing per
    // connection in this process. Liveness is the application's heartbeats;
    // this only finds dead TCP connections, after a generous idle time so
    // that a long stall of this process is not one.
    const int keepalive_s = std::max(10, static_cast<int>(2 * opt_.core.lost_after_s));
    executors_.set(zmq::sockopt::router_handover, 1);
    executors_.set(zmq::sockopt::tcp_keepalive, 1);
    executors_.set(zmq::sockopt::tcp_keepalive_idle, keepalive_s);
    executors_.set(zmq::sockopt::tcp_keepalive_intvl, std::max(1, keepalive_s / 4));
    executors_.set(zmq::sockopt::tcp_keepalive_cnt, 4);
    // A whole fleet connects at once (a start, a restart of this process):
    // ZeroMQ's default listen backlog of 100 overflowed at 10,000 and the
    // dropped SYNs came back after TCP's 1, 2, 4, 8, 16 s retries, so
    // registering took 32 s (docs/SCALE.md). The kernel caps it at
    // net.core.somaxconn.
    executors_.set(zmq::sockopt::backlog, kExecutorBacklog);
    guard_ = std::make_unique<ConnectionGuard>(
        ctx_, std::vector<zmq::socket_t*>{&executors_, &clients_},
        ConnectionGuardOptions{opt_.handshake_timeout_ms, opt_.max_pending_connections, opt_.max_descriptors},
        auth_ != nullptr);
    executors_.bind(opt_.executor_endpoint);
    clients_.bind(opt_.client_endpoint);
    executor_endpoint_ = executors_.get(zmq::sockopt::last_endpoint);
    client_endpoint_ = clients_.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return Status::IoError(std::string("cannot bind (executors ") + opt_.executor_endpoint + ", clients " +
                           opt_.client_endpoint + "): " + e.what());
  }
  decoder_ = std::make_unique<FrameDecoder>(
      FrameDecoder::Options{opt_.decode_off_loop_bytes, opt_.decode_queue_bytes},
      [max_tasks = opt_.core.max_tasks_per_job](FrameDecoder::Item& item) {  // on the decoder's thread
        if (item.source == kFromClients) {  // a submit over the cap is refused unparsed, as on the loop
          item.tasks = SubmitTaskCountOfFrame(item.frame.data(), item.frame.size(), &item.request_id);
          if (max_tasks > 0 && item.tasks > max_tasks) return;
        }
        item.parsed = FromFrame(item.frame, item.msg.get());
      });
  TC_LOG(Info) << "listening: executors on " << executor_endpoint_ << ", clients on " << client_endpoint_;
  if (Status s = StartParentLink(); !s.ok()) return s;
  return StartHttp();
}

// Resumed jobs count toward their owners' caps (the owner is journaled).
// A parent's tasks from an earlier run are not resumed: the parent saw
// this edge go and re-places them (docs/EDGE.md, "Two tiers").
void SchedulerServer::Impl::AdmitRecoveredJobs() {
  for (JobId id : core_.RunningJobIds()) {
    auto st = core_.JobStatus(id);
    if (!st.ok()) continue;
    if (IsParentOwner(st->owner))
      (void)core_.CancelJob(id, "edge restarted: the parent re-places its tasks");
    else
      admission_.JobStarted(id, st->owner);
  }
}

// The edge tier: with scheduler.parent this scheduler is one executor of
// its parent (parent_link.h); the link submits into this core like a
// client whose jobs are journaled, and never blocks the loop.
Status SchedulerServer::Impl::StartParentLink() {
  if (opt_.parent.endpoint.empty()) return Status::Ok();
  ParentLink::Host host;
  host.submit = [this](wire::JobSpec spec) -> StatusOr<JobId> {
    if (Status s = core_.CheckAdmission(TaskCountOf(spec)); !s.ok()) return s;
    auto def = JobDefFromWire(spec);
    if (!def.ok()) return def.status();
    auto id = core_.SubmitJob(std::move(def).value());
    if (id.ok()) durability_.JobAccepted(*id, "", spec.SerializeAsString());
    return id;
  };
  host.cancel = [this](JobId job, const std::string& reason) { (void)core_.CancelJob(job, reason); };
  host.fleet = [this] { return Fleet(); };
  parent_ = std::make_unique<ParentLink>(opt_.parent, opt_.max_message_bytes, ctx_, std::move(host));
  return parent_->Connect();
}

FleetSummary SchedulerServer::Impl::Fleet() const {
  FleetSummary f;
  for (const auto& [id, p] : peers_) {
    ++f.executors;
    f.slots += p.slots;
    f.gpus += p.gpus;
    f.kernels.insert(f.kernels.end(), p.kernels.begin(), p.kernels.end());
    f.side_effect_kernels.insert(f.side_effect_kernels.end(), p.side_effect_kernels.begin(),
                                 p.side_effect_kernels.end());
  }
  f.slots = std::min<uint32_t>(f.slots, kMaxWireSlots);  // what one executor may offer its parent
  f.gpus = std::min<uint32_t>(f.gpus, kMaxWireGpus);
  std::sort(f.kernels.begin(), f.kernels.end());
  f.kernels.erase(std::unique(f.kernels.begin(), f.kernels.end()), f.kernels.end());
  std::sort(f.side_effect_kernels.begin(), f.side_effect_kernels.end());
  f.side_effect_kernels.erase(std::unique(f.side_effect_kernels.begin(), f.side_effect_kernels.end()),
                              f.side_effect_kernels.end());
  return f;
}

// /metrics and the dashboard (/, /api/) render what the loop publishes
// (metrics.h, dashboard.h); the HTTP threads never touch the core.
Status SchedulerServer::Impl::StartHttp() {
  if (opt_.http_listen.empty()) return Status::Ok();
  metrics_ = std::make_unique<metrics::SchedulerMetrics>();
  dashboard_ = std::make_unique<dashboard::ActivityRecorder>(&clock_);
  core_.AddObserver(metrics_.get());
  core_.AddObserver(dashboard_.get());
  metrics_->AttachDashboard(dashboard_.get());
  durability_.on_commit = [m = metrics_.get()](double seconds, bool ok) { m->OnJournalCommit(seconds, ok); };
  metrics_->AttachBounds([this] { return CollectBounds(); });
  if (replicas_) metrics_->AttachReplica([this] { return CollectReplica(); });
  http_ = std::make_unique<HttpServer>();
  http_->Get("/metrics", [m = metrics_.get()] {
    auto snap = m->Fresh(std::chrono::seconds(2));
    if (!snap) return HttpServer::Reply{503, "text/plain; charset=utf-8", "the scheduler loop is not running\n", {}};
    return HttpServer::Reply{200, "text/plain; version=0.0.4; charset=utf-8", metrics::Render(*snap), {}};
  });
  RegisterDashboard();
  if (Status s = http_->Start(opt_.http_listen); !s.ok()) return s;
  bool loopback = IsLoopbackHttpListen(opt_.http_listen);
  TC_LOG(Info) << "metrics: http://" << http_->endpoint() << "/metrics, dashboard: http://" << http_->endpoint()
               << "/" << (loopback ? "" : " (no authentication: keep it on a private network)");
  return Status::Ok();
}

metrics::Bounds SchedulerServer::Impl::CollectBounds() const {
  metrics::Bounds b;
  const ConnectionGuard::Counters& c = guard_->counters();
  b.connections_accepted = c.accepted;
  b.shed_unfinished = c.evicted - c.idle_evicted;
  b.shed_idle = c.idle_evicted;
  b.backlog_refused = c.backlog_refused;
  b.accept_failures = c.accept_failures;
  b.connections_unfinished = guard_->pending();
  b.descriptor_limit = guard_->descriptor_limit();
  b.replies_held = replies_held_;
  b.replies_dropped = replies_dropped_;
  b.clients_disconnected = clients_disconnected_;
  b.frames_decoded_off_loop = decoder_->decoded();
  b.decode_queue_bytes = decoder_->queued_bytes() +
                         (waiting_[kFromExecutors] ? waiting_[kFromExecutors]->frame.size() : 0) +
                         (waiting_[kFromClients] ? waiting_[kFromClients]->frame.size() : 0);
  b.decode_waits = decode_waits_;
  for (const auto& [route, backlog] : backlogs_) b.client_backlog_bytes += backlog.bytes;
  for (const auto& [limit, n] : refusals_)  // keys refused at the handshake: the ZAP handler counts them
    b.refusals.emplace_back(limit, limit == "scheduler.trusted_keys" && auth_ ? n + auth_->refused() : n);
  return b;
}

const char* SchedulerServer::Impl::CoreLimitOf(const Status& refused) {
  return refused.code() == Status::Code::kTooLarge ? "core.max_tasks_per_job" : "core.max_queued_tasks";
}

// The page's files (compiled in, web_assets.h) and its JSON API
// (docs/DASHBOARD.md). The page may load nothing but itself: a strict
// Content-Security-Policy backs up the page's own escaping.
void SchedulerServer::Impl::RegisterDashboard() {
  using Reply = HttpServer::Reply;
  const std::vector<std::pair<std::string, std::string>> page_headers = {
      {"Content-Security-Policy",
       "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"}};
  for (std::string path : {"index.html", "app.js", "style.css"}) {
    const dashboard::EmbeddedFile* f = dashboard::FindAsset(path);
    if (!f) continue;
    Reply r{200, dashboard::AssetContentType(path), std::string(reinterpret_cast<const char*>(f->data), f->size),
            page_headers};
    http_->Get("/" + path, [r] { return r; });
    if (path == "index.html") http_->Get("/", [r] { return r; });
  }
  auto api = [this, page_headers](std::string path, auto render) {
    http_->Get(path, [m = metrics_.get(), render, page_headers](const HttpServer::Query& q) {
      auto snap = m->Fresh(std::chrono::seconds(2));
      if (!snap || !snap->dashboard)
        return Reply{503, "application/json", "{\"error\":\"the scheduler loop is not running\"}", page_headers};
      Reply r{200, "application/json", render(*snap->dashboard, q), page_headers};
      r.headers.emplace_back("Cache-Control", "no-store");
      return r;
    });
  };
  using State = dashboard::State;
  using Query = HttpServer::Query;
  api("/api/jobs", [](const State& s, const Query&) { return dashboard::RenderJobs(s); });
  api("/api/executors", [](const State& s, const Query&) { return dashboard::RenderExecutors(s); });
  api("/api/latency", [](const State& s, const Query&) { return dashboard::RenderLatency(s); });
  api("/api/owners", [](const State& s, const Query&) { return dashboard::RenderOwners(s); });
  // Which replica leads (docs/RELIABILITY.md, "Replicas"): from the metrics' snapshot.
  http_->Get("/api/replica", [m = metrics_.get(), page_headers](const HttpServer::Query&) {
    auto snap = m->Fresh(std::chrono::seconds(2));
    if (!snap) return Reply{503, "application/json", "{\"error\":\"the scheduler loop is not running\"}", page_headers};
    Reply r{200, "application/json", metrics::RenderReplicaJson(snap->replica), page_headers};
    r.headers.emplace_back("Cache-Control", "no-store");
    return r;
  });
  api("/api/attempts", [](const State& s, const Query& q) {
    uint64_t since = 0;
    if (auto it = q.find("since"); it != q.end()) since = std::strtoull(it->second.c_str(), nullptr, 10);
    return dashboard::RenderAttempts(s, since);
  });
}

// Keys make both sockets CURVE servers answered by our ZAP handler;
// without keys the sockets must not be reachable from the network.
Status SchedulerServer::Impl::SetUpKeys() {
  if (opt_.key_file.empty()) {
    // /metrics has no authentication at all; beyond loopback it is held
    // to the same rule as the sockets, so `insecure` is one decision.
    bool http_local = opt_.http_listen.empty() || IsLoopbackHttpListen(opt_.http_listen);
    bool local =
        IsLocalOnlyEndpoint(opt_.executor_endpoint) && IsLocalOnlyEndpoint(opt_.client_endpoint) && http_local;
    if (!local && !opt_.insecure)
      return Status::InvalidArgument(
          "listening beyond this machine (" + opt_.executor_endpoint + ", " + opt_.client_endpoint +
          (http_local ? "" : ", http " + opt_.http_listen) +
          ") needs keys: set scheduler.key_file and scheduler.trusted_keys (docs/SECURITY.md), or "
          "scheduler.insecure = true to let anyone who reaches these ports run work");
    if (local)
      TC_LOG(Info) << "no keys configured: listening on this machine only (docs/SECURITY.md opens it to a network)";
    else
      TC_LOG(Warn) << "INSECURE (scheduler.insecure = true): no keys; anyone who reaches " << opt_.client_endpoint
                   << " can run work, anyone who reaches " << opt_.executor_endpoint
                   << " can pose as an executor";
    return Status::Ok();
  }
  auto own = LoadKeyPair(opt_.key_file);
  if (!own.ok()) return own.status();
  auto trusted = LoadTrustedKeys(opt_.trusted_keys);
  if (!trusted.ok()) return trusted.status();
  auth_ = std::make_unique<ZapAuthenticator>(ctx_);
  auth_->SetTrusted(std::move(trusted).value());
  for (auto [sock, domain] : {std::pair{&executors_, ZapAuthenticator::kExecutorDomain},
                              std::pair{&clients_, ZapAuthenticator::kClientDomain}}) {
    sock->set(zmq::sockopt::zap_domain, domain);
    sock->set(zmq::sockopt::curve_server, true);
    sock->set(zmq::sockopt::curve_secretkey, own->secret_key);
  }
  TC_LOG(Info) << "keys: CURVE, " << auth_->trusted_count() << " trusted keys from " << opt_.trusted_keys;
  return Status::Ok();
}

void SchedulerServer::Impl::ReloadTrustedKeysNow() {
  auto trusted = LoadTrustedKeys(opt_.trusted_keys);
  if (!trusted.ok()) {
    TC_LOG(Error) << "trusted keys not reloaded (the old list stays): " << trusted.status().message();
    return;
  }
  // Executors under a key no longer trusted get nothing more from now on,
  // not only from their next message (which would still be refused).
  std::vector<std::string> revoked;
  for (const auto& [id, p] : peers_)
    if (!p.key.empty() && !trusted->count(p.key)) revoked.push_back(p.route);
  auth_->SetTrusted(std::move(trusted).value());
  TC_LOG(Info) << "reloaded " << auth_->trusted_count() << " trusted keys from " << opt_.trusted_keys;
  for (const std::string& route : revoked) DropRevokedExecutor(route);
}

void SchedulerServer::Impl::Run() {
  double next_tick = 0;
  NoteStall();
  while (!stop_.load(std::memory_order_relaxed)) {
    double now = clock_.Now();
    // The core's timer: ticks, and the wake-ups policies asked for
    // (Flush delivers them), so detection is not held to tick_s.
    double until = next_tick, wake = core_.NextWakeUp();
    if (wake >= 0) until = std::min(until, wake);
    long wait_ms = std::clamp<long>(static_cast<long>(std::ceil((until - now) * 1000)), 0, 100);
    // Only the sockets in use: an unused entry (null socket) would poll fd 0.
    // A socket whose next frame waits for room in the decoder is not read
    // (events 0) until decoded frames make room (server_decode.cpp).
    zmq::pollitem_t items[8] = {
        {executors_.handle(), 0, static_cast<short>(Reading(kFromExecutors) ? ZMQ_POLLIN : 0), 0},
        {clients_.handle(), 0, static_cast<short>(Reading(kFromClients) ? ZMQ_POLLIN : 0), 0},
        {nullptr, decoder_->fd(), ZMQ_POLLIN, 0}};
    size_t n_items = 3;
    const size_t guard_item = n_items;
    for (zmq::socket_t& m : guard_->monitors()) items[n_items++] = {m.handle(), 0, ZMQ_POLLIN, 0};
    const size_t auth_item = auth_ ? n_items++ : 0;
    if (auth_) items[auth_item] = {auth_->socket().handle(), 0, ZMQ_POLLIN, 0};
    const size_t parent_item = parent_ ? n_items++ : 0;
    if (parent_) items[parent_item] = {parent_->socket().handle(), 0, ZMQ_POLLIN, 0};
    const size_t replica_item = replicas_ ? n_items++ : 0;
    if (replicas_) items[replica_item] = {nullptr, replicas_->wake_fd, ZMQ_POLLIN, 0};
    NoteTurn();
    try {
      zmq::poll(items, n_items, std::chrono::milliseconds(wait_ms));
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;  // a signal; the flag says whether to stop
      TC_LOG(Error) << "poll failed: " << e.what();
      break;
    }
    NoteStall();
    if (auth_ && reload_keys_.exchange(false)) ReloadTrustedKeysNow();
    if (std::any_of(items + guard_item, items + guard_item + guard_->monitors().size(),
                    [](const zmq::pollitem_t& i) { return i.revents & ZMQ_POLLIN; }))
      guard_->OnEvents(clock_.Now());
    if (auth_ && (items[auth_item].revents & ZMQ_POLLIN)) auth_->HandleRequests();
    if (replicas_ && (items[replica_item].revents & ZMQ_POLLIN)) OnReplicaEvents();  // the role first
    if (items[2].revents & ZMQ_POLLIN) OnDecoded(decoder_->Done());
    if (items[0].revents & ZMQ_POLLIN) DrainExecutors();
    if (items[1].revents & ZMQ_POLLIN) DrainClients();
    if (parent_ && (items[parent_item].revents & ZMQ_POLLIN)) parent_->OnReadable(clock_.Now());
    // Again before the loss check: a long drain (a burst of large
    // requests) must not lose executors whose heartbeats wait behind it.
    NoteStall();
    now = clock_.Now();
    if (wake >= 0 && now >= wake) core_.Tick();  // the core's timers at their time, not at tick_s
    if (now >= next_tick) {
      core_.Tick();
      ResendPromotions(now);
      if (parent_) parent_->Tick(now);
      next_tick = now + opt_.tick_s;
    }
    Flush();
    if (parent_) parent_->Flush();
    LingerForReports();
    CommitJournal();
    if (!backlogs_.empty()) FlushClientBacklogs(clock_.Now());
    if (metrics_) metrics_->MaybePublish(core_, clock_.Now());
  }
  // Requests that arrived before the stop still count (a client's Watch
  // sent just before it gets the final status below).
  DrainExecutors();
  DrainClients();
  SettleDecodes();
  // Journaled, running jobs stay in the journal and resume on the next
  // start (their clients keep waiting and reconnect). In memory they end
  // now: executors are told to stop their attempts and watching clients
  // why, rather than leaving them waiting.
  std::vector<JobId> running = core_.RunningJobIds();
  if (!durability_.journaled())
    for (JobId id : running) (void)core_.CancelJob(id, "scheduler shut down");
  Flush();
  if (parent_) {
    parent_->Flush();
    parent_->Shutdown();
  }
  CommitJournal(/*force=*/true);  // whatever is held goes out now
  FlushClientBacklogs(clock_.Now());  // what clients' queues take now; the rest is lost with the process
  // Those messages are only queued; with linger 0 closing the sockets
  // would drop what the I/O thread has not written yet. Allow a moment.
  for (zmq::socket_t* sock : {&executors_, &clients_}) sock->set(zmq::sockopt::linger, kShutdownLingerMs);
  TC_LOG(Info) << "stopped; " << running.size()
               << (durability_.journaled() ? " running jobs resume on the next start" : " running jobs were cancelled");
}

// Replies and pushes to clients wait for the group commit that makes
// what they tell durable (Durability::Hold).
// A reply over max_message_bytes would cost the client its connection:
// it gets a TOO_LARGE error instead.
void SchedulerServer::Impl::SendClient(const std::string& route, const wire::ClientReply& reply) {
  if (size_t bytes = reply.ByteSizeLong(); bytes > opt_.max_message_bytes) {
    CountRefusal("scheduler.max_message_bytes");
    WarnBadInput("client socket", "a reply of " + std::to_string(bytes) + " bytes was not sent");
    wire::ClientReply err;
    err.set_version(kProtocolVersion);
    err.set_request_id(reply.request_id());
    *err.mutable_error() = MakeError(wire::Error::TOO_LARGE,
                                     "the reply would be " + std::to_string(bytes) +
                                         " bytes, over scheduler.max_message_bytes = " +
                                         std::to_string(opt_.max_message_bytes));
    return SendClient(route, err);
  }
  if (!durability_.Hold(route, reply)) Send(clients_, route, reply);
}

void SchedulerServer::Impl::CommitJournal(bool force) {
  if (replicas_) return ProposeTurn(force);
  durability_.Commit(clock_.Now(), force,
                     [this](const std::string& route, const wire::ClientReply& r) { Send(clients_, route, r); });
}

// A loop iteration normally follows the previous one within ~100 ms (the
// longest poll). A longer gap means this process stalled (SIGSTOP,
// swapping, a burst of big submits, a starved core), not the executors:
// what they reported meanwhile waits unread. Over 1 s the stall is taken
// off every attempt's start and run limit (a limit that fired because the
// scheduler was not listening restarted healthy no-ops: issue 41); over
// half of lost_after_s their heartbeats all count as seen once.
void SchedulerServer::Impl::NoteStall() {
  double now = clock_.Now();
  double gap = now - last_iteration_;
  last_iteration_ = now;
  if (gap > 1.0) core_.DiscountStall(gap - 0.1);
  if (opt_.core.lost_after_s <= 0 || gap <= opt_.core.lost_after_s / 2 || peers_.empty()) return;
  TC_LOG(Warn) << "scheduler loop stalled for " << gap << " s; not counting it against " << peers_.size()
               << " executors";
  for (auto& [id, p] : peers_) core_.ExecutorSeen(id);
}

// Reads one [route][payload] message; false when none is waiting.
// Malformed envelopes (extra frames) come back with ok == false.
bool SchedulerServer::Impl::Receive(zmq::socket_t& sock, std::string* route, zmq::message_t* payload, bool* ok) {
  zmq::message_t id;
  if (!sock.recv(id, zmq::recv_flags::dontwait)) return false;
  *route = id.to_string();
  *ok = true;
  if (!id.more()) {
    *ok = false;
    return true;
  }
  (void)sock.recv(*payload, zmq::recv_flags::none);
  while (payload->more()) {  // swallow extra frames: not our protocol
    *ok = false;
    (void)sock.recv(*payload, zmq::recv_flags::none);
  }
  return true;
}

void SchedulerServer::Impl::Send(zmq::socket_t& sock, const std::string& route, const google::protobuf::MessageLite& msg) {
  if (replicas_ && HoldForReplicas(&sock == &clients_, route, msg)) return;
  SendFrame(sock, route, ToFrame(msg));
}

void SchedulerServer::Impl::SendFrame(zmq::socket_t& sock, const std::string& route, zmq::message_t frame) {
  if (&sock == &clients_) return SendToClient(route, std::move(frame));
  try {
    sock.send(zmq::buffer(route), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    sock.send(std::move(frame), zmq::send_flags::dontwait);
  } catch (const zmq::error_t& e) {
    TC_LOG(Warn) << "send failed: " << e.what();
  }
}

void SchedulerServer::Impl::SendExecutorError(const std::string& route, wire::Error::Code code, std::string message) {
  wire::SchedulerToExecutor out;
  out.set_version(kProtocolVersion);
  *out.mutable_error() = MakeError(code, std::move(message));
  Send(executors_, route, out);
}

void SchedulerServer::Impl::SendClientError(const std::string& route, uint64_t request_id, wire::Error::Code code, std::string message) {
  wire::ClientReply out;
  out.set_version(kProtocolVersion);
  out.set_request_id(request_id);
  *out.mutable_error() = MakeError(code, std::move(message));
  SendClient(route, out);
}

// Bad input is logged, rate-limited so a flood cannot fill the disk.
void SchedulerServer::Impl::WarnBadInput(const char* where, const std::string& what) {
  uint64_t held_back = 0;
  if (!bad_input_log_.Allow(&held_back)) return;
  TC_LOG(Warn) << "bad input on " << where << ": " << what
               << (held_back ? " (+" + std::to_string(held_back) + " more)" : "");
}

SchedulerServer::SchedulerServer(ServerOptions options, PolicyChain policies)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(policies))) {}
SchedulerServer::~SchedulerServer() = default;
Status SchedulerServer::Bind() { return impl_->Bind(); }
void SchedulerServer::Run() { impl_->Run(); }
void SchedulerServer::Stop() { impl_->Stop(); }
std::string SchedulerServer::http_endpoint() const { return impl_->http_endpoint(); }
bool SchedulerServer::deposed() const { return impl_->deposed(); }
void SchedulerServer::ReloadTrustedKeys() { impl_->ReloadTrustedKeys(); }
void SchedulerServer::AddObserver(CoreObserver* observer) { impl_->AddObserver(observer); }
std::string SchedulerServer::executor_endpoint() const { return impl_->executor_endpoint(); }
std::string SchedulerServer::client_endpoint() const { return impl_->client_endpoint(); }

}  // namespace tailcut
