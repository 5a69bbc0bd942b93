// SchedulerServer's insides, shared by the files that implement it along
// its seams: server.cpp (set-up: journal, keys, sockets, parent link, HTTP;
// the loop; sending), server_executors.cpp (the executor socket),
// server_clients.cpp (the client socket: OnClientRequest dispatches to one
// handler per request), server_dispatch.cpp (the core's commands out, in
// batches), server_decode.cpp (large frames decoded off the loop). Every protobuf <-> core conversion is in
// wire_convert.h.
//
// Single-threaded like the server: everything here runs on Run()'s thread,
// except stop_ and reload_keys_ (atomics, set from any thread or a signal
// handler) and the HTTP threads, which read only metrics_ (metrics.h).
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <zmq.hpp>

#include "admission.h"
#include "connection_guard.h"
#include "dashboard.h"
#include "executor_reports.h"
#include "frame_decoder.h"
#include "http_server.h"
#include "metrics.h"
#include "parent_link.h"
#include "recovery.h"
#include "server_replicas.h"
#include "tailcut/common/clock.h"
#include "tailcut/common/log_limiter.h"
#include "tailcut/server/server.h"
#include "tailcut/server/trace_recorder.h"
#include "tailcut/wire/security.h"
#include "wire_convert.h"
#include "work_batcher.h"

namespace tailcut::server_detail {

// Who sent a client request: the owner its jobs get, and whether it may
// act on every job.
struct Caller {
  std::string owner;
  bool admin = false;
};

// Replies to one client connection that its full queue (client_hwm) did
// not take yet, in order (server_clients.cpp, "Held-back replies").
// What one held reply costs beyond its bytes: its zmq::message_t in the
// deque (64 bytes) and the heap block's header ZeroMQ and malloc add.
inline constexpr uint64_t kHeldReplyOverhead = 96;
// What a held reply counts against client_backlog_bytes: the memory it
// holds, not only its payload (a watch's reply is tens of bytes).
inline uint64_t HeldCharge(const zmq::message_t& frame) { return frame.size() + kHeldReplyOverhead; }
struct ClientBacklog {
  std::deque<zmq::message_t> frames;
  uint64_t bytes = 0;
  double since = 0;      // when it last made progress (or began)
  bool closing = false;  // disconnected: only the reason waits
};

struct Peer {
  std::string route;
  std::string host;  // Register.host: promotions go to an executor on the attempt's host
  double last_sent = 0;
  uint32_t gpu_throttle = 0;  // last NodeSignals.gpu_throttle_reasons
  // What it registered with, for the fleet an edge offers its parent.
  uint32_t slots = 0, gpus = 0;
  std::vector<std::string> kernels;
  std::string key;  // the CURVE key it registered under ("" without keys)
  std::vector<std::string> side_effect_kernels;  // of kernels, not idempotent by default
};

}  // namespace tailcut::server_detail

namespace tailcut {

class SchedulerServer::Impl {
 public:
  using Caller = server_detail::Caller;
  using Peer = server_detail::Peer;
  // Messages drained per socket before the loop ticks the core again.
  static constexpr int kMaxDrain = 4096;
  static constexpr int kExecutorBacklog = 65535;  // listen backlog of the executor socket

  Impl(ServerOptions o, PolicyChain policies)
      : opt_(std::move(o)),
        core_(EffectiveCoreOptions(opt_), &core_clock_, std::move(policies),
              std::make_unique<PredictorSuite>(opt_.predictor)),
        executors_(ctx_, zmq::socket_type::router),
        clients_(ctx_, zmq::socket_type::router) {}

  Status Bind();
  void Run();
  void Stop() { stop_.store(true); }
  void ReloadTrustedKeys() { reload_keys_.store(true); }
  void AddObserver(CoreObserver* o) { core_.AddObserver(o); }
  const std::string& executor_endpoint() const { return executor_endpoint_; }
  const std::string& client_endpoint() const { return client_endpoint_; }
  std::string http_endpoint() const { return http_ ? http_->endpoint() : ""; }
  bool deposed() const { return replicas_ && replicas_->state == server_detail::Replication::State::kDeposed; }

 private:
  // --- set-up (server.cpp)
  Status StartParentLink();
  FleetSummary Fleet() const;
  Status StartHttp();
  void RegisterDashboard();
  Status SetUpKeys();
  void ReloadTrustedKeysNow();

  // Resumed jobs count toward their owners' caps; an edge's parent tasks
  // from an earlier run are cancelled (after recovery, server.cpp).
  void AdmitRecoveredJobs();

  // --- replicas (server_replicas.cpp, server_replicas.h)
  Status StartReplicas();  // in Bind, with opt_.replicas
  void OnReplicaEvents();  // results and role changes
  void TakeOver();         // the barrier passed: recover, then lead
  void Depose(const std::string& why);
  void Release(std::vector<server_detail::Replication::Held>& held);
  // The term this replica leads in, for RegisterAck and Work (0: a single scheduler).
  uint64_t LeadTerm() const { return replicas_ ? replicas_->lead_term : 0; }
  // A replica that does not lead (yet): requests get NOT_LEADER.
  bool NotLeading() const { return replicas_ && replicas_->state != server_detail::Replication::State::kLeading; }
  // Error{NOT_LEADER} naming the leader and its endpoint for the receiver.
  void SendNotLeader(bool to_client, const std::string& route, uint64_t request_id);
  // True when the message waits for the turn's entry (or, deposed, is dropped).
  bool HoldForReplicas(bool to_client, const std::string& route, const google::protobuf::MessageLite& msg);
  void ProposeTurn(bool force);  // the replicated group commit

  // --- sending and the journal (server.cpp)
  void SendClient(const std::string& route, const wire::ClientReply& reply);
  void CommitJournal(bool force = false);
  void NoteStall();
  bool Receive(zmq::socket_t& sock, std::string* route, zmq::message_t* payload, bool* ok);
  void Send(zmq::socket_t& sock, const std::string& route, const google::protobuf::MessageLite& msg);
  void SendFrame(zmq::socket_t& sock, const std::string& route, zmq::message_t frame);
  void SendExecutorError(const std::string& route, wire::Error::Code code, std::string message);
  void SendClientError(const std::string& route, uint64_t request_id, wire::Error::Code code, std::string message);
  void WarnBadInput(const char* where, const std::string& what);
  // A limit refused a request or a registration: counted under its config
  // key for /metrics (tailcut_refusals_total, docs/METRICS.md).
  void CountRefusal(const char* limit) { ++refusals_[limit]; }
  static const char* CoreLimitOf(const Status& refused);  // which of the core's caps CheckAdmission named
  metrics::Bounds CollectBounds() const;
  metrics::ReplicaStatus CollectReplica() const;  // replicas_ only

  // --- large frames, decoded off the loop (server_decode.cpp,
  // frame_decoder.h); the sockets' frames by source:
  enum Source : int { kFromExecutors = 0, kFromClients = 1 };
  // True when `payload` went to the decoder (or waits for room there,
  // which stops reading `source`): its peer's frames are handled when
  // decoded, in order.
  bool Defer(Source source, const std::string& route, zmq::message_t& payload);
  void OnDecoded(std::vector<FrameDecoder::Item> items);
  void SettleDecodes();  // shutdown: everything deferred is handled
  bool Reading(Source source) const { return !waiting_[source].has_value(); }
  // A turn of the loop ends: the thread CPU time it took goes to /metrics
  // (tailcut_loop_turn_cpu_seconds).
  void NoteTurn();

  // --- the executor socket (server_executors.cpp)
  void DrainExecutors();
  void OnExecutorFrame(const std::string& route, const zmq::message_t& payload, bool parsed,
                       wire::ExecutorMessage& msg);
  void OnRegister(const std::string& route, const wire::Register& r, const std::string& key);
  // An executor under a key no longer trusted: out of the core at once,
  // its attempts run elsewhere (revocation is immediate).
  void DropRevokedExecutor(const std::string& route);
  void TakeBack(const std::string& route, ExecutorId id, const wire::Register& r);
  void OnReport(const std::string& route, const wire::Report& r);
  void NoteGpuThrottle(ExecutorId e, uint32_t reasons);
  void OnGoodbye(const std::string& route, const wire::Goodbye& g);
  uint32_t HeartbeatMsFor(size_t executors) const;
  double LostAfterS() const;  // the core's loss timeout at heartbeat_ms_
  void RetuneHeartbeats();
  void SendRegisterAck(const std::string& route, ExecutorId id);
  void AnswerReport(Peer& p);

  // --- the client socket (server_clients.cpp); each handler fills `reply`
  // or returns the error the client gets.
  void DrainClients();
  // A submit's size is checked before its frame is parsed (`tasks` from
  // SubmitTaskCountOfFrame); false: refused, the client told why.
  bool AdmitFrame(const std::string& route, uint64_t tasks, uint64_t request_id);
  void OnClientFrame(const std::string& route, const zmq::message_t& payload, bool parsed, wire::ClientRequest& req);
  bool Identify(const zmq::message_t& frame, const wire::ClientRequest& req, Caller* who) const;
  StatusOr<JobStatusInfo> OwnedJob(JobId job, const Caller& who) const;
  void OnClientRequest(const std::string& route, wire::ClientRequest& req, const Caller& who);
  // watch: SubmitJob.watch, the client waits on the job with this request.
  Status OnSubmit(const std::string& route, uint64_t request_id, wire::JobSpec& spec, bool watch, const Caller& who,
                  wire::ClientReply* reply);
  Status OnStatus(const wire::GetJobStatus& r, const Caller& who, wire::ClientReply* reply);
  Status OnCancel(const wire::CancelJob& r, const Caller& who, wire::ClientReply* reply);
  static constexpr size_t kExecutorPage = 1000;  // ListExecutors' largest page
  Status OnListExecutors(const wire::ListExecutors& r, wire::ClientReply* reply);
  Status OnWatch(const std::string& route, uint64_t request_id, const wire::WatchJob& r, const Caller& who,
                 wire::ClientReply* reply);
  Status OnResults(const wire::GetJobResults& r, const Caller& who, wire::ClientReply* reply);
  Status OnTrace(const wire::GetJobTrace& r, const Caller& who, wire::ClientReply* reply);
  Status CheckCaps(const std::function<Status()>& check);
  Status AddWatcher(JobId job, const std::string& route, uint64_t request_id, bool* added = nullptr);
  // A client connection under a key no longer trusted watches nothing more.
  void DropWatchersOf(const std::string& route);
  // Held-back replies (server_clients.cpp): every message to a client goes
  // through SendToClient; what its full queue does not take waits in
  // backlogs_, which FlushClientBacklogs sends on each loop turn.
  void SendToClient(const std::string& route, zmq::message_t frame);
  bool TrySendClient(const std::string& route, zmq::message_t& frame);  // false: its queue is full
  void FlushClientBacklogs(double now);
  void DisconnectClient(const std::string& route, server_detail::ClientBacklog& b, const std::string& why);

  // --- the core's commands out (server_dispatch.cpp)
  void Flush();
  // Output promotions (docs/JOBS.md, "Output directories"): a PromoteCmd is
  // journaled (JournalSink), made durable, then sent to an executor on the
  // host whose disk holds the attempt's directory, and resent every
  // kPromoteResendS until a Promoted answers it (the executor's rename is
  // idempotent), also after a restart of either side.
  static constexpr double kPromoteResendS = 2.0;
  ExecutorId PromoterFor(const PromoteCmd& c) const;
  // Adds `c` to `work` for an executor on its host, if one is connected.
  void QueuePromote(const PromoteCmd& c, double now, WorkBatcher* work);
  void ResendPromotions(double now);
  void OnPromoted(ExecutorId e, const wire::Promoted& p);  // server_executors.cpp
  void ForgetPeer(ExecutorId e);                           // the core declared it lost
  void SendWork(WorkBatcher& work);                        // each executor's batched Work
  // Before the turn's group commit: a short task's Report read into it
  // (ServerOptions::commit_linger_s). True when one was read.
  bool LingerForReports();
  bool work_sent_ = false;  // since the last LingerForReports

  ServerOptions opt_;
  SteadyClock clock_;
  HeldClock core_clock_{clock_};  // the core's: held per Report and per turn's commands (clock.h)
  SchedulerCore core_;
  zmq::context_t ctx_;
  zmq::socket_t executors_;
  zmq::socket_t clients_;
  std::string executor_endpoint_, client_endpoint_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> reload_keys_{false};
  std::unique_ptr<ZapAuthenticator> auth_;  // null without keys
  std::unique_ptr<ConnectionGuard> guard_;  // unfinished handshakes and descriptors
  std::unique_ptr<ParentLink> parent_;      // null without scheduler.parent
  std::unordered_map<std::string, ExecutorId> by_route_;
  std::unordered_map<ExecutorId, Peer> peers_;
  Watchers watchers_;
  std::unordered_map<std::string, server_detail::ClientBacklog> backlogs_;
  uint64_t replies_held_ = 0, replies_dropped_ = 0, clients_disconnected_ = 0;  // for /metrics
  std::map<std::pair<JobId, TaskIndex>, double> promote_sent_;  // pending promotions: when last sent
  double next_promote_check_ = 0;
  std::vector<Command> commands_;
  // The first block of the arena each executor message is parsed into
  // (DrainExecutors): a Report's hundreds of results cost no malloc and no
  // free each (issue 41).
  static constexpr size_t kDrainBlockBytes = 256 << 10;
  std::unique_ptr<char[]> drain_block_{new char[kDrainBlockBytes]};
  std::unique_ptr<FrameDecoder> decoder_;         // made in Bind
  std::optional<FrameDecoder::Item> waiting_[2];  // per source: a frame waiting for room in decoder_
  uint64_t decode_waits_ = 0;                     // times a socket waited for that room
  double turn_cpu_ = 0;                           // this thread's CPU time when the last turn ended
  // Before durability_: its sink writes into replicas_->batch.
  std::unique_ptr<server_detail::Replication> replicas_;  // null: a single scheduler
  Durability durability_{2 * static_cast<size_t>(opt_.core.job_retention) + 4096};
  Admission admission_{AdmissionLimits{opt_.max_jobs_per_owner, opt_.max_watchers_per_client, opt_.max_executors}};
  double last_iteration_ = 0;
  uint32_t heartbeat_ms_ = opt_.heartbeat_ms;  // the interval executors were told (RetuneHeartbeats)

  // What the wire conversions capped or ignored, logged like other bad input.
  const BadInputFn bad_executor_input_ = [this](const std::string& what) { WarnBadInput("executor socket", what); };
  LogLimiter bad_input_log_;  // one line a second at most
  // Every limit's refusals so far, each listed from the start (0).
  std::map<std::string, uint64_t> refusals_{
      {"core.max_tasks_per_job", 0},       {"core.max_queued_tasks", 0},
      {"scheduler.max_jobs_per_owner", 0}, {"scheduler.max_watchers_per_client", 0},
      {"scheduler.max_executors", 0},      {"scheduler.max_message_bytes", 0},
      {"scheduler.trusted_keys", 0},       {"executor.report_entries", 0}};
  // Declared last: the HTTP threads stop (http_ destroyed) before anything
  // they read goes.
  std::unique_ptr<metrics::SchedulerMetrics> metrics_;
  std::unique_ptr<TraceRecorder> trace_;  // [scheduler] trace_path
  RecentTrace recent_trace_{opt_.trace_memory_rows};  // for GetJobTrace
  std::unique_ptr<dashboard::ActivityRecorder> dashboard_;
  std::unique_ptr<HttpServer> http_;
};

}  // namespace tailcut
