// The executor socket (server_impl.h): Register, Report and Goodbye from
// executors (or child edges), and the heartbeats the scheduler sends them.
#include <algorithm>
#include <string>

#include "server_impl.h"
#include "tailcut/common/log.h"
#include "tailcut/wire/wire.h"

namespace tailcut {

void SchedulerServer::Impl::DrainExecutors() {
  std::string route;
  zmq::message_t payload;
  bool ok = true;
  google::protobuf::ArenaOptions arena_options;
  arena_options.initial_block = drain_block_.get();
  arena_options.initial_block_size = kDrainBlockBytes;
  for (int i = 0; i < kMaxDrain && Reading(kFromExecutors) && Receive(executors_, &route, &payload, &ok); ++i) {
    if (ok && Defer(kFromExecutors, route, payload)) continue;
    // One arena per message: what a large one needs beyond the block is
    // freed with it, not kept for the turn.
    google::protobuf::Arena arena(arena_options);
    wire::ExecutorMessage& msg = *google::protobuf::Arena::CreateMessage<wire::ExecutorMessage>(&arena);
    OnExecutorFrame(route, payload, ok && FromFrame(payload, &msg), msg);
  }
}

// One frame, parsed here or by the decoder (parsed false: it did not parse).
void SchedulerServer::Impl::OnExecutorFrame(const std::string& route, const zmq::message_t& payload, bool parsed,
                                            wire::ExecutorMessage& msg) {
  std::string key;
  if (auth_ && !auth_->Peer(payload, &key)) {
    CountRefusal("scheduler.trusted_keys");
    WarnBadInput("executor socket", "a message under a key no longer trusted");
    DropRevokedExecutor(route);
    return SendExecutorError(route, wire::Error::UNAUTHENTICATED, "this executor's key is no longer trusted");
  }
  if (!parsed) {
    WarnBadInput("executor socket", "unparseable message");
    return SendExecutorError(route, wire::Error::BAD_MESSAGE, "could not parse an ExecutorMessage");
  }
  if (msg.version() != kProtocolVersion) {
    WarnBadInput("executor socket", "protocol version " + std::to_string(msg.version()));
    return SendExecutorError(route, wire::Error::VERSION_MISMATCH,
                             "protocol version " + std::to_string(msg.version()) +
                                 " not spoken; this scheduler speaks " + std::to_string(kProtocolVersion));
  }
  if (NotLeading()) return SendNotLeader(/*to_client=*/false, route, 0);
  switch (msg.body_case()) {
    case wire::ExecutorMessage::kRegister: OnRegister(route, msg.register_(), key); break;
    case wire::ExecutorMessage::kReport: OnReport(route, msg.report()); break;
    case wire::ExecutorMessage::kGoodbye: OnGoodbye(route, msg.goodbye()); break;
    default: SendExecutorError(route, wire::Error::BAD_MESSAGE, "ExecutorMessage without a body");
  }
}

void SchedulerServer::Impl::DropRevokedExecutor(const std::string& route) {
  auto it = by_route_.find(route);
  if (it == by_route_.end()) return;
  core_.RemoveExecutor(it->second, false, "its key is no longer trusted");
  TC_LOG(Warn) << "executor " << it->second << " removed: its key is no longer trusted";
  peers_.erase(it->second);
  by_route_.erase(it);
}

void SchedulerServer::Impl::OnRegister(const std::string& route, const wire::Register& r, const std::string& key) {
  if (auto it = by_route_.find(route); it != by_route_.end()) {
    core_.RemoveExecutor(it->second, false, "re-registered");
    peers_.erase(it->second);
    by_route_.erase(it);
  } else if (Status s = admission_.CheckExecutor(peers_.size()); !s.ok()) {
    CountRefusal("scheduler.max_executors");
    WarnBadInput("executor socket", "Register refused: " + s.message());
    return SendExecutorError(route, wire::Error::BUSY, s.message());  // it retries Register
  }
  ExecutorDesc d = ExecutorDescFromWire(r, peers_.size() + 1);
  // Who may bring back what it held: its key and its name (docs/SECURITY.md).
  d.identity = key + "\n" + d.name;
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
  peer.key = key;
  peer.side_effect_kernels = d.side_effect_kernels;
  ExecutorId id = core_.AddExecutor(std::move(d));
  by_route_[route] = id;
  peers_[id] = std::move(peer);
  if (r.running_size() > 0 || r.undelivered_size() > 0) TakeBack(route, id, r);
  SendRegisterAck(route, id);
  RetuneHeartbeats();
}

// An executor that registers again brings what it kept while away:
// results commit (once), attempts are adopted or else cancelled. Runs
// before the next Pump, so nothing it holds is launched twice.
void SchedulerServer::Impl::TakeBack(const std::string& route, ExecutorId id, const wire::Register& r) {
  wire::SchedulerToExecutor cancel;
  cancel.set_version(kProtocolVersion);
  auto [committed, adopted] = TakeBackFromWire(core_, id, r, cancel.mutable_work(), bad_executor_input_);
  TC_LOG(Info) << "executor " << id << " came back with " << r.running_size() << " attempts (" << adopted
               << " adopted) and " << r.undelivered_size() << " results (" << committed << " committed)";
  if (!cancel.has_work()) return;
  cancel.mutable_work()->set_term(LeadTerm());
  Send(executors_, route, cancel);
}

void SchedulerServer::Impl::OnReport(const std::string& route, const wire::Report& r) {
  auto it = by_route_.find(route);
  if (it == by_route_.end()) {
    SendExecutorError(route, wire::Error::UNKNOWN_EXECUTOR, "not registered (the scheduler may have restarted)");
    return;
  }
  ExecutorId e = it->second;
  HeldClock::Scope one_reading(core_clock_);  // the Report's entries arrived together
  core_.ExecutorSeen(e);
  if (r.has_signals()) NoteGpuThrottle(e, r.signals().gpu_throttle_reasons());
  if (parent_) parent_->OnLocalReport(r);
  if (!ApplyReport(core_, e, r, bad_executor_input_)) {
    ++refusals_["executor.report_entries"];
    SendExecutorError(route, wire::Error::INVALID_ARGUMENT,
                      "Report refused: more entries than the attempts it was handed");
    return;
  }
  for (const wire::Promoted& p : r.promoted()) OnPromoted(e, p);
  if (auto p = peers_.find(e); p != peers_.end()) AnswerReport(p->second);
}

void SchedulerServer::Impl::OnPromoted(ExecutorId e, const wire::Promoted& p) {
  bool known = p.error().empty() ? core_.OutputPromoted(p.job_id(), p.task_index(), p.attempt_id())
                                 : core_.PromotionFailed(p.job_id(), p.task_index(), p.attempt_id(), p.error());
  if (!known) return;  // answered before (a resend crossed the answer)
  if (!p.error().empty())
    TC_LOG(Warn) << "job " << p.job_id() << " task " << p.task_index() << ": executor " << e
                 << " cannot promote its output: " << p.error();
  promote_sent_.erase({p.job_id(), p.task_index()});
}

// GPU clock throttling (NVML reason bits) is logged when it changes and
// feeds node health: the executor is SUSPECT while throttled
// (docs/PREDICTORS.md, "GPU throttling").
void SchedulerServer::Impl::NoteGpuThrottle(ExecutorId e, uint32_t reasons) {
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

void SchedulerServer::Impl::OnGoodbye(const std::string& route, const wire::Goodbye& g) {
  auto it = by_route_.find(route);
  if (it == by_route_.end()) return;
  TC_LOG(Info) << "executor " << it->second << " left: " << (g.reason().empty() ? "goodbye" : g.reason());
  core_.RemoveExecutor(it->second, false, g.reason());
  peers_.erase(it->second);
  by_route_.erase(it);
  RetuneHeartbeats();
}

// The heartbeat interval a fleet of `n` gets: heartbeat_ms, stretched so
// that the whole fleet sends at most heartbeat_rate heartbeats a second.
// Loss waits for as many intervals as core.lost_after_s allows at
// heartbeat_ms (docs/CONFIG.md, [scheduler] heartbeat_rate).
uint32_t SchedulerServer::Impl::HeartbeatMsFor(size_t n) const {
  double ms = opt_.heartbeat_rate > 0 ? 1000.0 * static_cast<double>(n) / opt_.heartbeat_rate : 0;
  return static_cast<uint32_t>(std::clamp(ms, static_cast<double>(opt_.heartbeat_ms), 3600e3));
}

double SchedulerServer::Impl::LostAfterS() const {
  return opt_.core.lost_after_s * heartbeat_ms_ / opt_.heartbeat_ms;
}

// When the fleet's size moves the interval by 2x either way, every
// executor hears the new one (a RegisterAck again: O(fleet) once per
// doubling, so O(1) per executor amortized) and the core's loss timeout
// follows.
void SchedulerServer::Impl::RetuneHeartbeats() {
  uint32_t want = HeartbeatMsFor(peers_.size());
  if (want < 2 * heartbeat_ms_ && 2 * want > heartbeat_ms_) return;
  TC_LOG(Info) << peers_.size() << " executors: heartbeat interval " << heartbeat_ms_ << " -> " << want << " ms";
  heartbeat_ms_ = want;
  if (opt_.core.lost_after_s > 0) core_.SetLostAfter(LostAfterS());
  for (auto& [id, p] : peers_) {
    SendRegisterAck(p.route, id);
    p.last_sent = clock_.Now();
  }
}

void SchedulerServer::Impl::SendRegisterAck(const std::string& route, ExecutorId id) {
  wire::SchedulerToExecutor ack;
  ack.set_version(kProtocolVersion);
  auto* a = ack.mutable_registered();
  a->set_executor_id(id);
  a->set_heartbeat_interval_ms(heartbeat_ms_);
  a->set_lost_after_ms(static_cast<uint32_t>(LostAfterS() * 1000));
  a->set_term(LeadTerm());
  Send(executors_, route, ack);
}

// The scheduler's side of a heartbeat is the answer to a Report, and only
// when nothing else went to that executor in the last half interval, or
// in the last fifth of the loss timeout when that is longer (five answers
// in the time an executor waits before it calls the scheduler lost): no
// timer, no scan of the fleet, and at 10,000 idle executors one message
// out for every two in, where the messages are most of the idle CPU
// (docs/SCALE.md).
void SchedulerServer::Impl::AnswerReport(Peer& p) {
  double now = clock_.Now();
  if (now - p.last_sent < std::max(heartbeat_ms_ / 2000.0, LostAfterS() / 5)) return;
  wire::SchedulerToExecutor hb;
  hb.set_version(kProtocolVersion);
  hb.mutable_heartbeat();
  Send(executors_, p.route, hb);
  p.last_sent = now;
}

}  // namespace tailcut
