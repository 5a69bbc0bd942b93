#include "tailcut/scheduler/server.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <zmq.hpp>

#include "admission.h"
#include "dashboard.h"
#include "http_server.h"
#include "metrics.h"
#include "parent_link.h"
#include "web_assets.h"
#include "recovery.h"
#include "tailcut/common/log.h"
#include "tailcut/scheduler/trace_recorder.h"
#include "tailcut/wire/security.h"
#include "tailcut/wire/wire.h"
#include "wire_convert.h"

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
      .Get("tick_s", &o->tick_s)
      .Get("state_dir", &o->state_dir)
      .Get("journal_sync", &sync)
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
      .Get("executor_hwm", &o->executor_hwm)
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
      .Check(o->tick_s > 0, "tick_s must be > 0")
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
  if (t.status().ok() && !o->parent.endpoint.empty()) t.Also(ValidateEndpoint(o->parent.endpoint));
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

namespace {

wire::ExecutorHealth::State HealthToWire(NodeHealth h) {
  switch (h) {
    case NodeHealth::kSuspect: return wire::ExecutorHealth::SUSPECT;
    case NodeHealth::kFailSlow: return wire::ExecutorHealth::FAIL_SLOW;
    case NodeHealth::kRecovered: return wire::ExecutorHealth::RECOVERED;
    default: return wire::ExecutorHealth::HEALTHY;
  }
}

// A journaled JobSpec back into the core's terms (recovery).
StatusOr<JobDef> ParseJournaledSpec(const std::string& bytes) {
  wire::JobSpec spec;
  if (!spec.ParseFromString(bytes)) return Status::InvalidArgument("unparseable JobSpec");
  return JobDefFromWire(spec);
}

// Messages drained per socket before the loop ticks the core again.
constexpr int kMaxDrain = 4096;
// How long closing sockets at shutdown may wait for the last replies.
constexpr int kShutdownLingerMs = 1000;

// Room kept in every message for what Batches does not count (envelope,
// version, ids), and a bound on one batched item's own fields.
constexpr size_t kMessageHeadroom = 4096;
constexpr size_t kItemOverhead = 64;

// The messages of one kind for one peer in one turn, each kept under the
// receiver's max_message_bytes: ZeroMQ drops the connection of a peer that
// sends a larger frame, so a large batch is split instead. An item larger
// than the budget alone gets a message of its own.
template <typename Msg>
class Batches {
 public:
  explicit Batches(size_t budget) : budget_(budget) {}
  // The message to add an item of about `bytes` to.
  Msg& For(size_t bytes) {
    if (msgs_.empty() || (used_ > 0 && used_ + bytes > budget_)) {
      msgs_.emplace_back();
      used_ = 0;
    }
    used_ += bytes;
    return msgs_.back();
  }
  std::vector<Msg>& messages() { return msgs_; }

 private:
  size_t budget_;
  size_t used_ = 0;
  std::vector<Msg> msgs_;
};

int Hwm(uint32_t messages) { return static_cast<int>(std::min<uint32_t>(messages, INT32_MAX)); }

struct Watcher {
  std::string route;
  uint64_t request_id;
};

// Who sent a client request: the owner its jobs get, and whether it may
// act on every job.
struct Caller {
  std::string owner;
  bool admin = false;
};

struct Peer {
  std::string route;
  std::string host;  // Register.host: promotions go to an executor on the attempt's host
  double last_sent = 0;
  uint32_t gpu_throttle = 0;  // last NodeSignals.gpu_throttle_reasons
  // What it registered with, for the fleet an edge offers its parent.
  uint32_t slots = 0, gpus = 0;
  std::vector<std::string> kernels;
};

}  // namespace

class SchedulerServer::Impl {
 public:
  Impl(ServerOptions o, PolicyChain policies)
      : opt_(std::move(o)),
        core_(opt_.core, &clock_, std::move(policies), std::make_unique<PredictorSuite>(opt_.predictor)),
        executors_(ctx_, zmq::socket_type::router),
        clients_(ctx_, zmq::socket_type::router) {}

  Status Bind() {
    if (Status s = durability_.Open(opt_.state_dir, opt_.journal_sync_full, core_, clock_, &ParseJournaledSpec,
                                    opt_.core.job_retention);
        !s.ok())
      return s;
    // Resumed jobs count toward their owners' caps (the owner is journaled).
    // A parent's tasks from an earlier run are not resumed: the parent saw
    // this edge go and re-places them (docs/EDGE.md, "Two tiers").
    for (JobId id : core_.RunningJobIds()) {
      auto st = core_.JobStatus(id);
      if (!st.ok()) continue;
      if (IsParentOwner(st->owner))
        (void)core_.CancelJob(id, "edge restarted: the parent re-places its tasks");
      else
        admission_.JobStarted(id, st->owner);
    }
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
      // read loses pushes beyond client_hwm (its Wait polls the final status
      // anyway; replies are resent on its retry). An executor queue only
      // fills when it has not read for minutes: its attempts are lost then.
      clients_.set(zmq::sockopt::sndhwm, Hwm(opt_.client_hwm));
      clients_.set(zmq::sockopt::rcvhwm, Hwm(opt_.client_hwm));
      executors_.set(zmq::sockopt::sndhwm, Hwm(opt_.executor_hwm));
      executors_.set(zmq::sockopt::rcvhwm, Hwm(opt_.executor_hwm));
      // An executor that reconnects (a reset only it saw) takes its routing
      // id over from the stale connection; ZMTP heartbeats close dead ones.
      // The timeout is generous: after a long stall of this process its
      // timers fire before pending input is read.
      executors_.set(zmq::sockopt::router_handover, 1);
      executors_.set(zmq::sockopt::heartbeat_ivl, static_cast<int>(opt_.heartbeat_ms));
      executors_.set(zmq::sockopt::heartbeat_timeout,
                     std::max(10000, static_cast<int>(4000 * opt_.core.lost_after_s)));
      executors_.bind(opt_.executor_endpoint);
      clients_.bind(opt_.client_endpoint);
      executor_endpoint_ = executors_.get(zmq::sockopt::last_endpoint);
      client_endpoint_ = clients_.get(zmq::sockopt::last_endpoint);
    } catch (const zmq::error_t& e) {
      return Status::IoError(std::string("cannot bind (executors ") + opt_.executor_endpoint + ", clients " +
                             opt_.client_endpoint + "): " + e.what());
    }
    TC_LOG(Info) << "listening: executors on " << executor_endpoint_ << ", clients on " << client_endpoint_;
    if (Status s = StartParentLink(); !s.ok()) return s;
    return StartHttp();
  }

  // The edge tier: with scheduler.parent this scheduler is one executor of
  // its parent (parent_link.h); the link submits into this core like a
  // client whose jobs are journaled, and never blocks the loop.
  Status StartParentLink() {
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

  FleetSummary Fleet() const {
    FleetSummary f;
    for (const auto& [id, p] : peers_) {
      ++f.executors;
      f.slots += p.slots;
      f.gpus += p.gpus;
      f.kernels.insert(f.kernels.end(), p.kernels.begin(), p.kernels.end());
    }
    f.slots = std::min<uint32_t>(f.slots, kMaxWireSlots);  // what one executor may offer its parent
    f.gpus = std::min<uint32_t>(f.gpus, kMaxWireGpus);
    std::sort(f.kernels.begin(), f.kernels.end());
    f.kernels.erase(std::unique(f.kernels.begin(), f.kernels.end()), f.kernels.end());
    return f;
  }

  // /metrics and the dashboard (/, /api/) render what the loop publishes
  // (metrics.h, dashboard.h); the HTTP threads never touch the core.
  Status StartHttp() {
    if (opt_.http_listen.empty()) return Status::Ok();
    metrics_ = std::make_unique<metrics::SchedulerMetrics>();
    dashboard_ = std::make_unique<dashboard::Recorder>();
    core_.AddObserver(metrics_.get());
    core_.AddObserver(dashboard_.get());
    metrics_->AttachDashboard(dashboard_.get());
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

  // The page's files (compiled in, web_assets.h) and its JSON API
  // (docs/DASHBOARD.md). The page may load nothing but itself: a strict
  // Content-Security-Policy backs up the page's own escaping.
  void RegisterDashboard() {
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
    api("/api/attempts", [](const State& s, const Query& q) {
      uint64_t since = 0;
      if (auto it = q.find("since"); it != q.end()) since = std::strtoull(it->second.c_str(), nullptr, 10);
      return dashboard::RenderAttempts(s, since);
    });
  }

  // Keys make both sockets CURVE servers answered by our ZAP handler;
  // without keys the sockets must not be reachable from the network.
  Status SetUpKeys() {
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

  void ReloadTrustedKeysNow() {
    auto trusted = LoadTrustedKeys(opt_.trusted_keys);
    if (!trusted.ok()) {
      TC_LOG(Error) << "trusted keys not reloaded (the old list stays): " << trusted.status().message();
      return;
    }
    auth_->SetTrusted(std::move(trusted).value());
    TC_LOG(Info) << "reloaded " << auth_->trusted_count() << " trusted keys from " << opt_.trusted_keys;
  }

  void Run() {
    double next_tick = 0;
    last_iteration_ = clock_.Now();
    while (!stop_.load(std::memory_order_relaxed)) {
      double now = clock_.Now();
      // The core's timer: ticks, and the wake-ups policies asked for
      // (Flush delivers them), so detection is not held to tick_s.
      double until = next_tick, wake = core_.NextWakeUp();
      if (wake >= 0) until = std::min(until, wake);
      long wait_ms = std::clamp<long>(static_cast<long>(std::ceil((until - now) * 1000)), 0, 100);
      // Only the sockets in use: an unused entry (null socket) would poll fd 0.
      zmq::pollitem_t items[4] = {{executors_.handle(), 0, ZMQ_POLLIN, 0}, {clients_.handle(), 0, ZMQ_POLLIN, 0}};
      size_t n_items = 2;
      const size_t auth_item = auth_ ? n_items++ : 0;
      if (auth_) items[auth_item] = {auth_->socket().handle(), 0, ZMQ_POLLIN, 0};
      const size_t parent_item = parent_ ? n_items++ : 0;
      if (parent_) items[parent_item] = {parent_->socket().handle(), 0, ZMQ_POLLIN, 0};
      try {
        zmq::poll(items, n_items, std::chrono::milliseconds(wait_ms));
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;  // a signal; the flag says whether to stop
        TC_LOG(Error) << "poll failed: " << e.what();
        break;
      }
      NoteStall();
      if (auth_ && reload_keys_.exchange(false)) ReloadTrustedKeysNow();
      if (auth_ && (items[auth_item].revents & ZMQ_POLLIN)) auth_->HandleRequests();
      if (items[0].revents & ZMQ_POLLIN) DrainExecutors();
      if (items[1].revents & ZMQ_POLLIN) DrainClients();
      if (parent_ && (items[parent_item].revents & ZMQ_POLLIN)) parent_->OnReadable(clock_.Now());
      now = clock_.Now();
      if (now >= next_tick) {
        core_.Tick();
        SendHeartbeats(now);
        ResendPromotions(now);
        if (parent_) parent_->Tick(now);
        next_tick = now + opt_.tick_s;
      }
      Flush();
      if (parent_) parent_->Flush();
      CommitJournal();
      if (metrics_) metrics_->MaybePublish(core_, clock_.Now());
    }
    // Requests that arrived before the stop still count (a client's Watch
    // sent just before it gets the final status below).
    DrainExecutors();
    DrainClients();
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
    // Those messages are only queued; with linger 0 closing the sockets
    // would drop what the I/O thread has not written yet. Allow a moment.
    for (zmq::socket_t* sock : {&executors_, &clients_}) sock->set(zmq::sockopt::linger, kShutdownLingerMs);
    TC_LOG(Info) << "stopped; " << running.size()
                 << (durability_.journaled() ? " running jobs resume on the next start" : " running jobs were cancelled");
  }

  void Stop() { stop_.store(true); }
  void ReloadTrustedKeys() { reload_keys_.store(true); }
  void AddObserver(CoreObserver* o) { core_.AddObserver(o); }
  const std::string& executor_endpoint() const { return executor_endpoint_; }
  const std::string& client_endpoint() const { return client_endpoint_; }
  std::string http_endpoint() const { return http_ ? http_->endpoint() : ""; }

 private:
  // Replies and pushes to clients wait for the group commit that makes
  // what they tell durable (Durability::Hold).
  // A reply over max_message_bytes would cost the client its connection:
  // it gets a TOO_LARGE error instead.
  void SendClient(const std::string& route, const wire::ClientReply& reply) {
    if (size_t bytes = reply.ByteSizeLong(); bytes > opt_.max_message_bytes) {
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
  void CommitJournal(bool force = false) {
    durability_.Commit(clock_.Now(), force,
                       [this](const std::string& route, const wire::ClientReply& r) { Send(clients_, route, r); });
  }

  // A loop iteration normally follows the previous one within ~100 ms. A
  // gap over half of lost_after_s means this process stalled (SIGSTOP,
  // swapping, a burst of big submits), not the executors: their heartbeats
  // may still wait unread, so they all count as seen once.
  void NoteStall() {
    double now = clock_.Now();
    double gap = now - last_iteration_;
    last_iteration_ = now;
    if (opt_.core.lost_after_s <= 0 || gap <= opt_.core.lost_after_s / 2 || peers_.empty()) return;
    TC_LOG(Warn) << "scheduler loop stalled for " << gap << " s; not counting it against " << peers_.size()
                 << " executors";
    for (auto& [id, p] : peers_) core_.ExecutorSeen(id);
  }

  // Reads one [route][payload] message; false when none is waiting.
  // Malformed envelopes (extra frames) come back with ok == false.
  bool Receive(zmq::socket_t& sock, std::string* route, zmq::message_t* payload, bool* ok) {
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

  void Send(zmq::socket_t& sock, const std::string& route, const google::protobuf::MessageLite& msg) {
    try {
      sock.send(zmq::buffer(route), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      sock.send(ToFrame(msg), zmq::send_flags::dontwait);
    } catch (const zmq::error_t& e) {
      TC_LOG(Warn) << "send failed: " << e.what();
    }
  }

  void SendExecutorError(const std::string& route, wire::Error::Code code, std::string message) {
    wire::SchedulerToExecutor out;
    out.set_version(kProtocolVersion);
    *out.mutable_error() = MakeError(code, std::move(message));
    Send(executors_, route, out);
  }

  void SendClientError(const std::string& route, uint64_t request_id, wire::Error::Code code, std::string message) {
    wire::ClientReply out;
    out.set_version(kProtocolVersion);
    out.set_request_id(request_id);
    *out.mutable_error() = MakeError(code, std::move(message));
    SendClient(route, out);
  }

  // ------------------------------------------------------- executors --
  void DrainExecutors() {
    std::string route;
    zmq::message_t payload;
    bool ok = true;
    wire::ExecutorMessage msg;
    for (int i = 0; i < kMaxDrain && Receive(executors_, &route, &payload, &ok); ++i) {
      if (auth_ && !auth_->Peer(payload)) {
        WarnBadInput("executor socket", "a message under a key no longer trusted");
        SendExecutorError(route, wire::Error::UNAUTHENTICATED, "this executor's key is no longer trusted");
        continue;
      }
      if (!ok || !FromFrame(payload, &msg)) {
        WarnBadInput("executor socket", "unparseable message");
        SendExecutorError(route, wire::Error::BAD_MESSAGE, "could not parse an ExecutorMessage");
        continue;
      }
      if (msg.version() != kProtocolVersion) {
        WarnBadInput("executor socket", "protocol version " + std::to_string(msg.version()));
        SendExecutorError(route, wire::Error::VERSION_MISMATCH,
                          "protocol version " + std::to_string(msg.version()) + " not spoken; this scheduler speaks " +
                              std::to_string(kProtocolVersion));
        continue;
      }
      switch (msg.body_case()) {
        case wire::ExecutorMessage::kRegister: OnRegister(route, msg.register_()); break;
        case wire::ExecutorMessage::kReport: OnReport(route, msg.report()); break;
        case wire::ExecutorMessage::kGoodbye: OnGoodbye(route, msg.goodbye()); break;
        default: SendExecutorError(route, wire::Error::BAD_MESSAGE, "ExecutorMessage without a body");
      }
    }
  }

  void OnRegister(const std::string& route, const wire::Register& r) {
    if (auto it = by_route_.find(route); it != by_route_.end()) {
      core_.RemoveExecutor(it->second, false, "re-registered");
      peers_.erase(it->second);
      by_route_.erase(it);
    } else if (Status s = admission_.CheckExecutor(peers_.size()); !s.ok()) {
      WarnBadInput("executor socket", "Register refused: " + s.message());
      return SendExecutorError(route, wire::Error::BUSY, s.message());  // it retries Register
    }
    ExecutorDesc d = ExecutorDescFromWire(r, peers_.size() + 1);
    if (d.slots != r.cpu_slots() && r.cpu_slots() != 0)
      WarnBadInput("executor socket", "Register.cpu_slots = " + std::to_string(r.cpu_slots()) + " capped at " +
                                          std::to_string(kMaxWireSlots));
    std::string kernels;
    for (auto& k : d.kernels) kernels += (kernels.empty() ? "" : ",") + k;
    TC_LOG(Info) << "executor joined: " << d.name << " (" << (d.host.empty() ? "?" : d.host) << "), " << d.slots
                 << " slots, " << d.gpus << " gpus, kernels " << (kernels.empty() ? "none" : kernels);
    Peer peer;
    peer.route = route;
    peer.host = d.host;
    peer.last_sent = clock_.Now();
    peer.slots = d.slots;
    peer.gpus = d.gpus;
    peer.kernels = d.kernels;
    ExecutorId id = core_.AddExecutor(std::move(d));
    by_route_[route] = id;
    peers_[id] = std::move(peer);
    if (r.running_size() > 0 || r.undelivered_size() > 0) TakeBack(route, id, r);
    wire::SchedulerToExecutor ack;
    ack.set_version(kProtocolVersion);
    auto* a = ack.mutable_registered();
    a->set_executor_id(id);
    a->set_heartbeat_interval_ms(opt_.heartbeat_ms);
    a->set_lost_after_ms(static_cast<uint32_t>(opt_.core.lost_after_s * 1000));
    Send(executors_, route, ack);
  }

  // An executor that registers again brings what it kept while away:
  // results commit (once), attempts are adopted or else cancelled. Runs
  // before the next Pump, so nothing it holds is launched twice.
  void TakeBack(const std::string& route, ExecutorId id, const wire::Register& r) {
    wire::SchedulerToExecutor cancel;
    cancel.set_version(kProtocolVersion);
    auto [committed, adopted] = TakeBackFromWire(core_, id, r, cancel.mutable_work(), bad_executor_input_);
    TC_LOG(Info) << "executor " << id << " came back with " << r.running_size() << " attempts (" << adopted
                 << " adopted) and " << r.undelivered_size() << " results (" << committed << " committed)";
    if (cancel.has_work()) Send(executors_, route, cancel);
  }

  void OnReport(const std::string& route, const wire::Report& r) {
    auto it = by_route_.find(route);
    if (it == by_route_.end()) {
      SendExecutorError(route, wire::Error::UNKNOWN_EXECUTOR, "not registered (the scheduler may have restarted)");
      return;
    }
    ExecutorId e = it->second;
    core_.ExecutorSeen(e);
    if (r.has_signals()) NoteGpuThrottle(e, r.signals().gpu_throttle_reasons());
    if (parent_) parent_->OnLocalReport(r);
    ApplyReport(core_, e, r, bad_executor_input_);
    for (const wire::Promoted& p : r.promoted()) OnPromoted(e, p);
  }

  // ------------------------------------------------------- promotions --
  // docs/JOBS.md, "Output directories": the core emits a PromoteCmd per
  // commit; it is journaled, made durable, then sent to an executor on the
  // host whose disk holds the attempt's directory, and resent every
  // kPromoteResendS until a Promoted answers it (the executor's rename is
  // idempotent), also after a restart of either side.
  static constexpr double kPromoteResendS = 2.0;

  void OnPromoted(ExecutorId e, const wire::Promoted& p) {
    bool known = p.error().empty() ? core_.OutputPromoted(p.job_id(), p.task_index(), p.attempt_id())
                                   : core_.PromotionFailed(p.job_id(), p.task_index(), p.attempt_id(), p.error());
    if (!known) return;  // answered before (a resend crossed the answer)
    if (!p.error().empty())
      TC_LOG(Warn) << "job " << p.job_id() << " task " << p.task_index() << ": executor " << e
                   << " cannot promote its output: " << p.error();
    durability_.OutputPromoted(p.job_id(), p.task_index());
    promote_sent_.erase({p.job_id(), p.task_index()});
  }

  // The executor that ran the attempt, else one on its host; 0 when none is connected.
  ExecutorId PromoterFor(const PromoteCmd& c) const {
    if (auto p = peers_.find(c.executor); c.executor && p != peers_.end() && p->second.host == c.host)
      return c.executor;
    for (const auto& [id, peer] : peers_)
      if (peer.host == c.host) return id;
    return 0;
  }

  // Adds `c` to the Work of its promoter (false when none is connected: resent later).
  template <typename Work>
  bool QueuePromote(const PromoteCmd& c, double now, Work* work, size_t budget) {
    ExecutorId e = PromoterFor(c);
    if (!e) return false;
    auto* m = work->try_emplace(e, budget).first->second.For(c.output_dir.size() + kItemOverhead).mutable_work();
    wire::Promote* p = m->add_promote();
    p->set_job_id(c.job);
    p->set_task_index(c.task);
    p->set_attempt_id(c.attempt);
    p->set_output_dir(c.output_dir);
    promote_sent_[{c.job, c.task}] = now;
    return true;
  }

  // Promotions not answered within kPromoteResendS (lost, or their executor left): again.
  void ResendPromotions(double now) {
    if (now < next_promote_check_) return;
    next_promote_check_ = now + kPromoteResendS / 2;
    std::unordered_map<ExecutorId, Batches<wire::SchedulerToExecutor>> work;
    const size_t budget = std::max<size_t>(opt_.max_message_bytes, 2 * kMessageHeadroom) - kMessageHeadroom;
    for (const PromoteCmd& c : core_.PendingPromotions()) {
      auto sent = promote_sent_.find({c.job, c.task});
      if (sent != promote_sent_.end() && now - sent->second < kPromoteResendS) continue;
      QueuePromote(c, now, &work, budget);
    }
    SendWork(&work);
  }

  // GPU clock throttling (NVML reason bits) is logged when it changes and
  // feeds node health: the executor is SUSPECT while throttled
  // (docs/PREDICTORS.md, "GPU throttling").
  void NoteGpuThrottle(ExecutorId e, uint32_t reasons) {
    auto p = peers_.find(e);
    if (p == peers_.end() || p->second.gpu_throttle == reasons) return;
    core_.ExecutorSignals(e, reasons);
    if (reasons) {
      TC_LOG(Warn) << "executor " << e << ": GPU clocks throttled (NVML reasons 0x" << std::hex << reasons
                   << std::dec << ")";
    } else {
      TC_LOG(Info) << "executor " << e << ": GPU clocks no longer throttled";
    }
    p->second.gpu_throttle = reasons;
  }

  void OnGoodbye(const std::string& route, const wire::Goodbye& g) {
    auto it = by_route_.find(route);
    if (it == by_route_.end()) return;
    TC_LOG(Info) << "executor " << it->second << " left: " << (g.reason().empty() ? "goodbye" : g.reason());
    core_.RemoveExecutor(it->second, false, g.reason());
    peers_.erase(it->second);
    by_route_.erase(it);
  }

  void SendHeartbeats(double now) {
    // Forget peers the core declared lost; their next message re-registers them.
    for (auto it = peers_.begin(); it != peers_.end();) {
      if (!core_.HasExecutor(it->first)) {
        by_route_.erase(it->second.route);
        it = peers_.erase(it);
      } else {
        ++it;
      }
    }
    wire::SchedulerToExecutor hb;
    hb.set_version(kProtocolVersion);
    hb.mutable_heartbeat();
    for (auto& [id, p] : peers_) {
      if (now - p.last_sent >= opt_.heartbeat_ms / 1000.0) {
        Send(executors_, p.route, hb);
        p.last_sent = now;
      }
    }
  }

  // --------------------------------------------------------- clients --
  void DrainClients() {
    std::string route;
    zmq::message_t payload;
    bool ok = true;
    wire::ClientRequest req;
    for (int i = 0; i < kMaxDrain && Receive(clients_, &route, &payload, &ok); ++i) {
      if (!ok || !FromFrame(payload, &req)) {
        WarnBadInput("client socket", "unparseable message");
        SendClientError(route, 0, wire::Error::BAD_MESSAGE, "could not parse a ClientRequest");
        continue;
      }
      if (req.version() != kProtocolVersion) {
        SendClientError(route, req.request_id(), wire::Error::VERSION_MISMATCH,
                        "protocol version " + std::to_string(req.version()) + " not spoken; this scheduler speaks " +
                            std::to_string(kProtocolVersion));
        continue;
      }
      Caller who;
      if (!Identify(payload, req, &who)) {
        WarnBadInput("client socket", "a request under a key no longer trusted");
        SendClientError(route, req.request_id(), wire::Error::UNAUTHENTICATED, "this client's key is no longer trusted");
        continue;
      }
      OnClientRequest(route, req, who);
    }
  }

  // With keys the owner is the CURVE key that sent the frame; without keys
  // (loopback only) the user name the client states.
  bool Identify(const zmq::message_t& frame, const wire::ClientRequest& req, Caller* who) const {
    if (!auth_) {
      who->owner = "user:" + (req.user().empty() ? std::string("anonymous") : req.user());
      return true;
    }
    const TrustedKey* key = auth_->Peer(frame, &who->owner);
    if (!key) return false;
    who->admin = key->role == PeerRole::kAdmin;
    return true;
  }

  // The job's status when `who` may see and act on it: its owner or an admin.
  StatusOr<JobStatusInfo> OwnedJob(JobId job, const Caller& who) const {
    auto st = core_.JobStatus(job);
    if (st.ok() && !who.admin && st->owner != who.owner)
      return Status::PermissionDenied("job " + std::to_string(job) + " is not your job");
    return st;
  }

  void OnClientRequest(const std::string& route, wire::ClientRequest& req, const Caller& who) {
    wire::ClientReply reply;
    reply.set_version(kProtocolVersion);
    reply.set_request_id(req.request_id());
    // A reply that reads job state must not overtake what the core did
    // before it (an executor's report, another client's cancel): pushes of
    // streamed results and final statuses still waiting for the end of the
    // turn go out first, so a status poll that finds a job done comes after
    // its results. Submits do not read: their launches stay batched.
    if (req.body_case() != wire::ClientRequest::kSubmit) Flush();
    switch (req.body_case()) {
      case wire::ClientRequest::kSubmit: {
        wire::JobSpec& spec = *req.mutable_submit()->mutable_job();
        spec.set_owner(who.owner);
        // Keys are per owner: another owner's key neither finds nor blocks a job.
        const std::string key = spec.request_key().empty() ? "" : who.owner + "\n" + spec.request_key();
        if (JobId known = durability_.keys().Find(key)) {  // a retry of a submit already accepted
          auto st = core_.JobStatus(known);
          reply.mutable_submitted()->set_job_id(known);
          reply.mutable_submitted()->set_tasks(st.ok() ? st->tasks : 0);
          // Over the watcher cap the retry is still answered; Wait's own Watch gets BUSY.
          if (st.ok() && st->state == JobState::kRunning && spec.stream_results())
            (void)AddWatcher(known, route, req.request_id());
          break;
        }
        // Caps first, on the spec's numbers alone: nothing is built for a
        // job that does not fit (a 40-byte template may ask for 50M tasks).
        const std::string& owner = who.owner;
        Status admit = CheckNames(spec);
        if (admit.ok()) admit = core_.CheckAdmission(TaskCountOf(spec));
        if (admit.ok())
          admit = CheckCaps([&] {
            Status s = admission_.CheckJob(owner);
            return s.ok() && spec.stream_results() ? admission_.CheckWatch(route) : s;
          });
        if (!admit.ok()) return SendClientError(route, req.request_id(), ErrorCodeFor(admit, true), admit.message());
        auto def = JobDefFromWire(spec);
        if (!def.ok())
          return SendClientError(route, req.request_id(), ErrorCodeFor(def.status(), true), def.status().message());
        bool stream = def->stream_results;
        std::string name = def->name;
        uint32_t tasks = def->TaskCount();
        auto id = core_.SubmitJob(std::move(def).value());
        if (!id.ok())
          return SendClientError(route, req.request_id(), ErrorCodeFor(id.status(), true), id.status().message());
        TC_LOG(Debug) << "job " << *id << " (" << name << ") submitted";
        durability_.JobAccepted(*id, key, spec.SerializeAsString());
        admission_.JobStarted(*id, owner);
        if (stream) (void)AddWatcher(*id, route, req.request_id());  // checked above
        reply.mutable_submitted()->set_job_id(*id);
        reply.mutable_submitted()->set_tasks(tasks);
        break;
      }
      case wire::ClientRequest::kStatus: {
        auto st = OwnedJob(req.status().job_id(), who);
        if (!st.ok())
          return SendClientError(route, req.request_id(), ErrorCodeFor(st.status(), false), st.status().message());
        JobStatusToWire(*st, reply.mutable_status());
        break;
      }
      case wire::ClientRequest::kCancel: {
        if (Status s = OwnedJob(req.cancel().job_id(), who).status(); !s.ok())
          return SendClientError(route, req.request_id(), ErrorCodeFor(s, false), s.message());
        auto st = core_.CancelJob(req.cancel().job_id(), "cancelled by client");
        if (!st.ok())
          return SendClientError(route, req.request_id(), ErrorCodeFor(st.status(), false), st.status().message());
        JobStatusToWire(*st, reply.mutable_status());
        break;
      }
      case wire::ClientRequest::kListExecutors: {
        double now = clock_.Now();
        for (const auto& e : core_.Executors()) {
          auto* x = reply.mutable_executors()->add_executors();
          x->set_executor_id(e.id);
          x->set_name(e.name);
          x->set_host(e.host);
          x->set_cpu_slots(e.slots);
          x->set_gpus(e.gpus);
          for (auto& [k, v] : e.labels) (*x->mutable_labels())[k] = v;
          x->set_running(e.running);
          x->set_finished(e.finished);
          x->set_quarantined(e.quarantined);
          x->set_last_seen_s_ago(now - e.last_seen);
          x->mutable_health()->set_state(HealthToWire(e.health.state));
          x->mutable_health()->set_speed_factor(e.health.speed_factor);
        }
        break;
      }
      case wire::ClientRequest::kWatch: {
        JobId job = req.watch().job_id();
        auto st = OwnedJob(job, who);
        if (!st.ok())
          return SendClientError(route, req.request_id(), ErrorCodeFor(st.status(), false), st.status().message());
        if (st->state == JobState::kRunning)
          if (Status w = AddWatcher(job, route, req.request_id()); !w.ok())
            return SendClientError(route, req.request_id(), wire::Error::BUSY, w.message());
        // AddWatcher may have flushed the job's end: answer with the status now.
        if (auto now = core_.JobStatus(job); now.ok()) st = std::move(now);
        JobStatusToWire(*st, reply.mutable_status());
        break;  // the reply carries the current status; the final one is pushed
      }
      case wire::ClientRequest::kResults: {
        if (Status s = OwnedJob(req.results().job_id(), who).status(); !s.ok())
          return SendClientError(route, req.request_id(), ErrorCodeFor(s, false), s.message());
        auto outs = core_.JobOutputs(req.results().job_id());
        if (!outs.ok())
          return SendClientError(route, req.request_id(), ErrorCodeFor(outs.status(), false), outs.status().message());
        auto* rs = reply.mutable_results();
        rs->set_job_id(req.results().job_id());
        for (const auto& o : *outs) {
          auto* r = rs->add_results();
          r->set_task_index(o.task);
          r->set_attempt_id(o.attempt);
          r->set_executor_id(o.executor);
          r->set_output(o.output);
          r->set_run_s(o.run_s);
        }
        break;
      }
      case wire::ClientRequest::kTrace: {
        const JobId job = req.trace().job_id();
        auto st = OwnedJob(job, who);
        if (!st.ok())
          return SendClientError(route, req.request_id(), ErrorCodeFor(st.status(), false), st.status().message());
        wire::JobTrace* t = reply.mutable_trace();
        t->set_job_id(job);
        t->set_state(JobStateToWire(st->state));
        t->set_committed(st->committed);
        t->set_ring_rows(recent_trace_.capacity());
        for (const TraceRow& r : recent_trace_.RowsOf(job)) {
          wire::TraceAttempt* a = t->add_attempts();
          a->set_task(r.task);
          a->set_executor(r.executor);
          a->set_start_s(r.start);
          a->set_end_s(r.end);
          a->set_task_class(r.task_class);
          a->set_input_size(r.input_size);
        }
        break;
      }
      default:
        return SendClientError(route, req.request_id(), wire::Error::INVALID_ARGUMENT, "ClientRequest without a body");
    }
    SendClient(route, reply);
  }

  // Jobs that ended in this turn free their owner's and watchers' places
  // only in Flush; a cap check that fails flushes and asks again, so that a
  // cancel followed at once by a submit or a watch is not refused.
  template <typename Check>
  Status CheckCaps(Check check) {
    Status s = check();
    if (s.ok()) return s;
    Flush();
    return check();
  }

  // `route` watches running job `job` unless it is at
  // scheduler.max_watchers_per_client.
  Status AddWatcher(JobId job, const std::string& route, uint64_t request_id) {
    if (Status s = CheckCaps([&] { return admission_.CheckWatch(route); }); !s.ok()) return s;
    // That check may have flushed the job's end: nothing left to watch then
    // (a waiting client reads the final status by polling).
    if (auto st = core_.JobStatus(job); !st.ok() || st->state != JobState::kRunning) return Status::Ok();
    watchers_[job].push_back({route, request_id});
    admission_.WatchAdded(route);
    return Status::Ok();
  }

  // -------------------------------------------------------- commands --
  // Sends the core's commands, batched: one Work per executor and one
  // TaskResults per watched job.
  void Flush() {
    commands_.clear();
    core_.TakeCommands(&commands_);
    if (commands_.empty()) return;
    if (parent_)
      for (const Command& c : commands_) parent_->OnCommand(c);
    std::unordered_map<ExecutorId, Batches<wire::SchedulerToExecutor>> work;
    std::unordered_map<JobId, Batches<wire::ClientReply>> results;
    std::vector<JobFinishedCmd> finished;
    bool shares_to_commit = false;
    const size_t budget = std::max<size_t>(opt_.max_message_bytes, 2 * kMessageHeadroom) - kMessageHeadroom;
    for (auto& c : commands_) {
      if (auto* l = std::get_if<LaunchCmd>(&c)) {
        if (dashboard_) dashboard_->OnLaunch(*l, core_, clock_.Now());
        const TaskDef* t = core_.TaskOf(l->job, l->task);
        if (!t) continue;  // its job ended and was evicted this turn; the attempt's cancel follows
        auto& batch = work.try_emplace(l->executor, budget).first->second;
        auto* a = batch.For(t->args.size() + t->kernel.size() + kItemOverhead).mutable_work()->add_assign();
        a->set_attempt_id(l->attempt);
        a->set_job_id(l->job);
        a->set_task_index(l->task);
        a->set_kernel(t->kernel);
        a->set_args(t->args);
        a->mutable_demand()->set_cpu_slots(t->cpu_slots);
        a->mutable_demand()->set_gpus(t->gpus);
        if (const JobDef* def = core_.JobDefOf(l->job); def && !def->output_dir.empty())
          a->set_output_dir(def->output_dir);
        // Durable before any executor runs a share (Work goes out below).
        std::vector<uint64_t> counts;
        AttemptId since = 0;
        if (l->share.divisible() && durability_.journaled() && shares_journaled_.insert(l->job).second &&
            core_.FixedShares(l->job, &counts, &since)) {
          durability_.SharesFixed(l->job, counts, since);
          shares_to_commit = true;
        }
        // The scheduler's share of a divisible job, or one the submitter fixed.
        if (const WorkShare& sh = l->share.divisible() ? l->share : t->share; sh.divisible()) {
          a->mutable_share()->set_begin(sh.begin);
          a->mutable_share()->set_count(sh.count);
          a->mutable_share()->set_total(sh.total);
        }
      } else if (auto* x = std::get_if<CancelCmd>(&c)) {
        if (peers_.count(x->executor))
          work.try_emplace(x->executor, budget).first->second.For(kItemOverhead).mutable_work()->add_cancel(x->attempt);
      } else if (auto* tc = std::get_if<TaskCommittedCmd>(&c)) {
        if (!watchers_.count(tc->job)) continue;
        auto& batch = results.try_emplace(tc->job, budget).first->second;
        auto* rs = batch.For(tc->output.size() + kItemOverhead).mutable_results();
        rs->set_job_id(tc->job);
        auto* r = rs->add_results();
        r->set_task_index(tc->task);
        r->set_attempt_id(tc->attempt);
        r->set_executor_id(tc->executor);
        r->set_output(std::move(tc->output));
        r->set_run_s(tc->run_s);
      } else if (auto* f = std::get_if<JobFinishedCmd>(&c)) {
        shares_journaled_.erase(f->job);
        finished.push_back(*f);
      } else if (auto* pc = std::get_if<PromoteCmd>(&c)) {
        // Journaled and durable before any executor renames (CommitNow below).
        durability_.PromotionPending(pc->job, pc->task, pc->attempt, pc->host);
        shares_to_commit |= durability_.journaled();
        QueuePromote(*pc, clock_.Now(), &work, budget);
      }
    }
    // One transaction for all of this turn's new shares and promotions.
    if (shares_to_commit) durability_.CommitNow();
    SendWork(&work);
    for (auto& [job, batch] : results) {
      for (auto& reply : batch.messages()) {
        reply.set_version(kProtocolVersion);
        for (const Watcher& w : watchers_[job]) {
          reply.set_request_id(w.request_id);
          SendClient(w.route, reply);
        }
      }
    }
    for (const JobFinishedCmd& f : finished) {
      admission_.JobFinished(f.job);
      auto it = watchers_.find(f.job);
      if (it == watchers_.end()) continue;
      wire::ClientReply reply;
      reply.set_version(kProtocolVersion);
      JobStatusToWire(f.status, reply.mutable_status());  // the job may be evicted by now
      for (const Watcher& w : it->second) {
        reply.set_request_id(w.request_id);
        SendClient(w.route, reply);
        admission_.WatchEnded(w.route);
      }
      watchers_.erase(it);
    }
  }

  void SendWork(std::unordered_map<ExecutorId, Batches<wire::SchedulerToExecutor>>* work) {
    for (auto& [e, batch] : *work) {
      auto p = peers_.find(e);
      if (p == peers_.end()) continue;
      for (auto& msg : batch.messages()) {
        msg.set_version(kProtocolVersion);
        Send(executors_, p->second.route, msg);
      }
      p->second.last_sent = clock_.Now();
    }
  }

  // Bad input is logged, rate-limited so a flood cannot fill the disk.
  void WarnBadInput(const char* where, const std::string& what) {
    double now = clock_.Now();
    if (now - last_bad_input_log_ < 1.0) {
      ++suppressed_bad_input_;
      return;
    }
    TC_LOG(Warn) << "bad input on " << where << ": " << what
                 << (suppressed_bad_input_ ? " (+" + std::to_string(suppressed_bad_input_) + " more)" : "");
    last_bad_input_log_ = now;
    suppressed_bad_input_ = 0;
  }

  ServerOptions opt_;
  SteadyClock clock_;
  SchedulerCore core_;
  zmq::context_t ctx_;
  zmq::socket_t executors_;
  zmq::socket_t clients_;
  std::string executor_endpoint_, client_endpoint_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> reload_keys_{false};
  std::unique_ptr<ZapAuthenticator> auth_;  // null without keys
  std::unique_ptr<ParentLink> parent_;      // null without scheduler.parent
  std::unordered_map<std::string, ExecutorId> by_route_;
  std::unordered_map<ExecutorId, Peer> peers_;
  std::unordered_map<JobId, std::vector<Watcher>> watchers_;
  std::unordered_set<JobId> shares_journaled_;  // divisible jobs whose shares are in the journal
  std::map<std::pair<JobId, TaskIndex>, double> promote_sent_;  // pending promotions: when last sent
  double next_promote_check_ = 0;
  std::vector<Command> commands_;
  Durability durability_{2 * static_cast<size_t>(opt_.core.job_retention) + 4096};
  Admission admission_{AdmissionLimits{opt_.max_jobs_per_owner, opt_.max_watchers_per_client, opt_.max_executors}};
  double last_iteration_ = 0;
  double last_bad_input_log_ = -10;
  // What the wire conversions capped or ignored, logged like other bad input.
  const BadInputFn bad_executor_input_ = [this](const std::string& what) { WarnBadInput("executor socket", what); };
  uint64_t suppressed_bad_input_ = 0;
  // Declared last: the HTTP threads stop (http_ destroyed) before anything
  // they read goes.
  std::unique_ptr<metrics::SchedulerMetrics> metrics_;
  std::unique_ptr<TraceRecorder> trace_;  // [scheduler] trace_path
  RecentTrace recent_trace_{opt_.trace_memory_rows};  // for GetJobTrace
  std::unique_ptr<dashboard::Recorder> dashboard_;
  std::unique_ptr<HttpServer> http_;
};

SchedulerServer::SchedulerServer(ServerOptions options, PolicyChain policies)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(policies))) {}
SchedulerServer::~SchedulerServer() = default;
Status SchedulerServer::Bind() { return impl_->Bind(); }
void SchedulerServer::Run() { impl_->Run(); }
void SchedulerServer::Stop() { impl_->Stop(); }
std::string SchedulerServer::http_endpoint() const { return impl_->http_endpoint(); }
void SchedulerServer::ReloadTrustedKeys() { impl_->ReloadTrustedKeys(); }
void SchedulerServer::AddObserver(CoreObserver* observer) { impl_->AddObserver(observer); }
std::string SchedulerServer::executor_endpoint() const { return impl_->executor_endpoint(); }
std::string SchedulerServer::client_endpoint() const { return impl_->client_endpoint(); }

}  // namespace tailcut
