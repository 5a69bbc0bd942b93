#include "tailcut/scheduler/server.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include <zmq.hpp>

#include "recovery.h"
#include "tailcut/common/log.h"
#include "tailcut/wire/wire.h"
#include "wire_convert.h"

namespace tailcut {

Status LoadServerOptions(const Config& cfg, ServerOptions* o) {
  o->state_dir = "tailcut-state";
  std::string sync = o->journal_sync_full ? "full" : "normal";
  TableReader t(cfg, "scheduler");
  t.Get("executor_endpoint", &o->executor_endpoint)
      .Get("client_endpoint", &o->client_endpoint)
      .Get("heartbeat_ms", &o->heartbeat_ms)
      .Get("tick_s", &o->tick_s)
      .Get("state_dir", &o->state_dir)
      .Get("journal_sync", &sync)
      .Also(ValidateEndpoint(o->executor_endpoint))
      .Also(ValidateEndpoint(o->client_endpoint))
      .Check(o->heartbeat_ms > 0, "heartbeat_ms must be > 0")
      .Check(o->tick_s > 0, "tick_s must be > 0")
      .Check(sync == "full" || sync == "normal", "journal_sync must be \"full\" or \"normal\"");
  o->journal_sync_full = sync == "full";
  if (!t.status().ok()) return t.status();
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

struct Watcher {
  std::string route;
  uint64_t request_id;
};

struct Peer {
  std::string route;
  double last_sent = 0;
  uint32_t gpu_throttle = 0;  // last NodeSignals.gpu_throttle_reasons
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
    try {
      for (zmq::socket_t* s : {&executors_, &clients_}) {
        s->set(zmq::sockopt::linger, 0);
        s->set(zmq::sockopt::sndhwm, 0);  // batches are few; never drop them
        s->set(zmq::sockopt::rcvhwm, 0);
      }
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
    return Status::Ok();
  }

  void Run() {
    double next_tick = 0;
    last_iteration_ = clock_.Now();
    while (!stop_.load(std::memory_order_relaxed)) {
      double now = clock_.Now();
      long wait_ms = std::clamp<long>(static_cast<long>((next_tick - now) * 1000), 0, 100);
      zmq::pollitem_t items[] = {{executors_.handle(), 0, ZMQ_POLLIN, 0}, {clients_.handle(), 0, ZMQ_POLLIN, 0}};
      try {
        zmq::poll(items, 2, std::chrono::milliseconds(wait_ms));
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;  // a signal; the flag says whether to stop
        TC_LOG(Error) << "poll failed: " << e.what();
        break;
      }
      NoteStall();
      if (items[0].revents & ZMQ_POLLIN) DrainExecutors();
      if (items[1].revents & ZMQ_POLLIN) DrainClients();
      now = clock_.Now();
      if (now >= next_tick) {
        core_.Tick();
        SendHeartbeats(now);
        next_tick = now + opt_.tick_s;
      }
      Flush();
      CommitJournal();
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
    CommitJournal(/*force=*/true);  // whatever is held goes out now
    // Those messages are only queued; with linger 0 closing the sockets
    // would drop what the I/O thread has not written yet. Allow a moment.
    for (zmq::socket_t* sock : {&executors_, &clients_}) sock->set(zmq::sockopt::linger, kShutdownLingerMs);
    TC_LOG(Info) << "stopped; " << running.size()
                 << (durability_.journaled() ? " running jobs resume on the next start" : " running jobs were cancelled");
  }

  void Stop() { stop_.store(true); }
  void AddObserver(CoreObserver* o) { core_.AddObserver(o); }
  const std::string& executor_endpoint() const { return executor_endpoint_; }
  const std::string& client_endpoint() const { return client_endpoint_; }

 private:
  // Replies and pushes to clients wait for the group commit that makes
  // what they tell durable (Durability::Hold).
  void SendClient(const std::string& route, const wire::ClientReply& reply) {
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
    }
    ExecutorDesc d = ExecutorDescFromWire(r, peers_.size() + 1);
    std::string kernels;
    for (auto& k : d.kernels) kernels += (kernels.empty() ? "" : ",") + k;
    TC_LOG(Info) << "executor joined: " << d.name << " (" << (d.host.empty() ? "?" : d.host) << "), " << d.slots
                 << " slots, " << d.gpus << " gpus, kernels " << kernels;
    ExecutorId id = core_.AddExecutor(std::move(d));
    by_route_[route] = id;
    peers_[id] = Peer{route, clock_.Now()};
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
    auto [committed, adopted] = TakeBackFromWire(core_, id, r, cancel.mutable_work());
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
    ApplyReport(core_, e, r);
  }

  // GPU clock throttling (NVML reason bits) is recorded and logged when it
  // changes. Feeding it into node health as a slowdown hint is future work
  // (docs/GPU.md): the detector already sees the slower run times.
  void NoteGpuThrottle(ExecutorId e, uint32_t reasons) {
    auto p = peers_.find(e);
    if (p == peers_.end() || p->second.gpu_throttle == reasons) return;
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
      OnClientRequest(route, req);
    }
  }

  void OnClientRequest(const std::string& route, const wire::ClientRequest& req) {
    wire::ClientReply reply;
    reply.set_version(kProtocolVersion);
    reply.set_request_id(req.request_id());
    switch (req.body_case()) {
      case wire::ClientRequest::kSubmit: {
        const std::string& key = req.submit().job().request_key();
        if (JobId known = durability_.keys().Find(key)) {  // a retry of a submit already accepted
          auto st = core_.JobStatus(known);
          reply.mutable_submitted()->set_job_id(known);
          reply.mutable_submitted()->set_tasks(st.ok() ? st->tasks : 0);
          if (st.ok() && st->state == JobState::kRunning && req.submit().job().stream_results())
            watchers_[known].push_back({route, req.request_id()});
          break;
        }
        auto def = JobDefFromWire(req.submit().job());
        if (!def.ok()) return SendClientError(route, req.request_id(), wire::Error::INVALID_ARGUMENT, def.status().message());
        bool stream = def->stream_results;
        std::string name = def->name;
        auto id = core_.SubmitJob(std::move(def).value());
        if (!id.ok())
          return SendClientError(route, req.request_id(), ErrorCodeFor(id.status(), true), id.status().message());
        TC_LOG(Debug) << "job " << *id << " (" << name << ") submitted";
        durability_.JobAccepted(*id, key, req.submit().job().SerializeAsString());
        if (stream) watchers_[*id].push_back({route, req.request_id()});
        reply.mutable_submitted()->set_job_id(*id);
        reply.mutable_submitted()->set_tasks(core_.JobStatus(*id)->tasks);
        break;
      }
      case wire::ClientRequest::kStatus: {
        auto st = core_.JobStatus(req.status().job_id());
        if (!st.ok()) return SendClientError(route, req.request_id(), wire::Error::UNKNOWN_JOB, st.status().message());
        JobStatusToWire(*st, reply.mutable_status());
        break;
      }
      case wire::ClientRequest::kCancel: {
        Status s = core_.CancelJob(req.cancel().job_id(), "cancelled by client");
        if (!s.ok()) return SendClientError(route, req.request_id(), ErrorCodeFor(s, false), s.message());
        JobStatusToWire(*core_.JobStatus(req.cancel().job_id()), reply.mutable_status());
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
        auto st = core_.JobStatus(job);
        if (!st.ok()) return SendClientError(route, req.request_id(), wire::Error::UNKNOWN_JOB, st.status().message());
        JobStatusToWire(*st, reply.mutable_status());
        if (st->state == JobState::kRunning) watchers_[job].push_back({route, req.request_id()});
        break;  // the reply carries the current status; the final one is pushed
      }
      case wire::ClientRequest::kResults: {
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
      default:
        return SendClientError(route, req.request_id(), wire::Error::INVALID_ARGUMENT, "ClientRequest without a body");
    }
    SendClient(route, reply);
  }

  // -------------------------------------------------------- commands --
  // Sends the core's commands, batched: one Work per executor and one
  // TaskResults per watched job.
  void Flush() {
    commands_.clear();
    core_.TakeCommands(&commands_);
    if (commands_.empty()) return;
    std::unordered_map<ExecutorId, wire::SchedulerToExecutor> work;
    std::unordered_map<JobId, wire::ClientReply> results;
    std::vector<JobFinishedCmd> finished;
    for (auto& c : commands_) {
      if (auto* l = std::get_if<LaunchCmd>(&c)) {
        const TaskDef* t = core_.TaskOf(l->job, l->task);
        auto* a = work[l->executor].mutable_work()->add_assign();
        a->set_attempt_id(l->attempt);
        a->set_job_id(l->job);
        a->set_task_index(l->task);
        a->set_kernel(t->kernel);
        a->set_args(t->args);
        a->mutable_demand()->set_cpu_slots(t->cpu_slots);
        a->mutable_demand()->set_gpus(t->gpus);
      } else if (auto* x = std::get_if<CancelCmd>(&c)) {
        if (peers_.count(x->executor)) work[x->executor].mutable_work()->add_cancel(x->attempt);
      } else if (auto* tc = std::get_if<TaskCommittedCmd>(&c)) {
        if (!watchers_.count(tc->job)) continue;
        auto& reply = results[tc->job];
        auto* rs = reply.mutable_results();
        rs->set_job_id(tc->job);
        auto* r = rs->add_results();
        r->set_task_index(tc->task);
        r->set_attempt_id(tc->attempt);
        r->set_executor_id(tc->executor);
        r->set_output(std::move(tc->output));
        r->set_run_s(tc->run_s);
      } else if (auto* f = std::get_if<JobFinishedCmd>(&c)) {
        finished.push_back(*f);
      }
    }
    for (auto& [e, msg] : work) {
      auto p = peers_.find(e);
      if (p == peers_.end()) continue;
      msg.set_version(kProtocolVersion);
      Send(executors_, p->second.route, msg);
      p->second.last_sent = clock_.Now();
    }
    for (auto& [job, reply] : results) {
      reply.set_version(kProtocolVersion);
      for (const Watcher& w : watchers_[job]) {
        reply.set_request_id(w.request_id);
        SendClient(w.route, reply);
      }
    }
    for (const JobFinishedCmd& f : finished) {
      auto it = watchers_.find(f.job);
      if (it == watchers_.end()) continue;
      wire::ClientReply reply;
      reply.set_version(kProtocolVersion);
      JobStatusToWire(*core_.JobStatus(f.job), reply.mutable_status());
      for (const Watcher& w : it->second) {
        reply.set_request_id(w.request_id);
        SendClient(w.route, reply);
      }
      watchers_.erase(it);
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
  std::unordered_map<std::string, ExecutorId> by_route_;
  std::unordered_map<ExecutorId, Peer> peers_;
  std::unordered_map<JobId, std::vector<Watcher>> watchers_;
  std::vector<Command> commands_;
  Durability durability_{2 * static_cast<size_t>(opt_.core.job_retention) + 4096};
  double last_iteration_ = 0;
  double last_bad_input_log_ = -10;
  uint64_t suppressed_bad_input_ = 0;
};

SchedulerServer::SchedulerServer(ServerOptions options, PolicyChain policies)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(policies))) {}
SchedulerServer::~SchedulerServer() = default;
Status SchedulerServer::Bind() { return impl_->Bind(); }
void SchedulerServer::Run() { impl_->Run(); }
void SchedulerServer::Stop() { impl_->Stop(); }
void SchedulerServer::AddObserver(CoreObserver* observer) { impl_->AddObserver(observer); }
std::string SchedulerServer::executor_endpoint() const { return impl_->executor_endpoint(); }
std::string SchedulerServer::client_endpoint() const { return impl_->client_endpoint(); }

}  // namespace tailcut
