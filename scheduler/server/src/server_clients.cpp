// The client socket (server_impl.h): requests are read, checked
// (version, key) and dispatched to one handler each; a handler fills the
// reply or returns the error the client gets.
#include <string>

#include "server_impl.h"
#include "tailcut/common/log.h"
#include "tailcut/wire/wire.h"

namespace tailcut {

void SchedulerServer::Impl::DrainClients() {
  std::string route;
  zmq::message_t payload;
  bool ok = true;
  wire::ClientRequest req;
  for (int i = 0; i < kMaxDrain && Reading(kFromClients) && Receive(clients_, &route, &payload, &ok); ++i) {
    if (ok && Defer(kFromClients, route, payload)) continue;
    // A submit's size is checked before it is parsed: its TaskSpecs are
    // counted from the field headers, so a frame of millions of empty ones
    // is refused without building them (docs/LIMITS.md).
    uint64_t request_id = 0;
    const uint64_t tasks = ok ? SubmitTaskCountOfFrame(payload.data(), payload.size(), &request_id) : 0;
    if (AdmitFrame(route, tasks, request_id)) OnClientFrame(route, payload, ok && FromFrame(payload, &req), req);
  }
}

bool SchedulerServer::Impl::AdmitFrame(const std::string& route, uint64_t tasks, uint64_t request_id) {
  if (tasks == 0) return true;
  Status s = core_.CheckAdmission(tasks);
  if (s.ok()) return true;
  CountRefusal(CoreLimitOf(s));
  SendClientError(route, request_id, ErrorCodeFor(s, true), s.message());
  return false;
}

// One request, parsed here or by the decoder (parsed false: it did not parse).
void SchedulerServer::Impl::OnClientFrame(const std::string& route, const zmq::message_t& payload, bool parsed,
                                          wire::ClientRequest& req) {
  if (!parsed) {
    WarnBadInput("client socket", "unparseable message");
    return SendClientError(route, 0, wire::Error::BAD_MESSAGE, "could not parse a ClientRequest");
  }
  if (req.version() != kProtocolVersion) {
    return SendClientError(route, req.request_id(), wire::Error::VERSION_MISMATCH,
                           "protocol version " + std::to_string(req.version()) + " not spoken; this scheduler speaks " +
                               std::to_string(kProtocolVersion));
  }
  Caller who;
  if (!Identify(payload, req, &who)) {
    CountRefusal("scheduler.trusted_keys");
    WarnBadInput("client socket", "a request under a key no longer trusted");
    DropWatchersOf(route);
    return SendClientError(route, req.request_id(), wire::Error::UNAUTHENTICATED,
                           "this client's key is no longer trusted");
  }
  if (NotLeading()) return SendNotLeader(/*to_client=*/true, route, req.request_id());
  OnClientRequest(route, req, who);
}

// With keys the owner is the CURVE key that sent the frame; without keys
// (loopback only) the user name the client states.
bool SchedulerServer::Impl::Identify(const zmq::message_t& frame, const wire::ClientRequest& req, Caller* who) const {
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
StatusOr<JobStatusInfo> SchedulerServer::Impl::OwnedJob(JobId job, const Caller& who) const {
  auto st = core_.JobStatus(job);
  if (st.ok() && !who.admin && st->owner != who.owner)
    return Status::PermissionDenied("job " + std::to_string(job) + " is not your job");
  return st;
}

void SchedulerServer::Impl::OnClientRequest(const std::string& route, wire::ClientRequest& req, const Caller& who) {
  wire::ClientReply reply;
  reply.set_version(kProtocolVersion);
  reply.set_request_id(req.request_id());
  // A reply that reads job state must not overtake what the core did
  // before it (an executor's report, another client's cancel): pushes of
  // streamed results and final statuses still waiting for the end of the
  // turn go out first, so a status poll that finds a job done comes after
  // its results. Submits do not read: their launches stay batched.
  const bool submitting = req.body_case() == wire::ClientRequest::kSubmit;
  if (!submitting) Flush();
  Status s;
  switch (req.body_case()) {
    case wire::ClientRequest::kSubmit:
      s = OnSubmit(route, req.request_id(), *req.mutable_submit()->mutable_job(), req.submit().watch(), who, &reply);
      break;
    case wire::ClientRequest::kStatus: s = OnStatus(req.status(), who, &reply); break;
    case wire::ClientRequest::kCancel: s = OnCancel(req.cancel(), who, &reply); break;
    case wire::ClientRequest::kListExecutors: s = OnListExecutors(req.list_executors(), &reply); break;
    case wire::ClientRequest::kWatch: s = OnWatch(route, req.request_id(), req.watch(), who, &reply); break;
    case wire::ClientRequest::kResults: s = OnResults(req.results(), who, &reply); break;
    case wire::ClientRequest::kTrace: s = OnTrace(req.trace(), who, &reply); break;
    default: s = Status::InvalidArgument("ClientRequest without a body");
  }
  if (!s.ok()) return SendClientError(route, req.request_id(), ErrorCodeFor(s, submitting), s.message());
  SendClient(route, reply);
}

Status SchedulerServer::Impl::OnSubmit(const std::string& route, uint64_t request_id, wire::JobSpec& spec, bool watch,
                                       const Caller& who, wire::ClientReply* reply) {
  spec.set_owner(who.owner);
  // Keys are per owner: another owner's key neither finds nor blocks a job.
  const std::string key = spec.request_key().empty() ? "" : who.owner + "\n" + spec.request_key();
  // The body as journaled, in a form that is the same for the same content:
  // a retry must match it, another body under the key is refused. Without a
  // key it is made only once the job is valid: serializing a 16 MiB body
  // costs the loop ~75 ms, not to be spent on a submit refused anyway.
  std::string body = key.empty() ? std::string() : DeterministicBytes(spec);
  JobId known = 0;
  switch (durability_.keys().Find(key, RequestKeys::Digest(body), &known)) {
    case RequestKeys::Match::kNew: break;
    case RequestKeys::Match::kConflict:
      return Status::InvalidArgument("request key '" + spec.request_key() + "' already made job " +
                                     std::to_string(known) + " from another job body; a new job needs a new key");
    case RequestKeys::Match::kRetry: {  // a retry of a submit already accepted
    auto st = core_.JobStatus(known);
    reply->mutable_submitted()->set_job_id(known);
    reply->mutable_submitted()->set_tasks(st.ok() ? st->tasks : 0);
    // Over the watcher cap the retry is still answered, not watching;
    // Wait's own Watch gets BUSY. A job already ended is not watched: the
    // client's Wait finds its final status at once.
    if (st.ok() && st->state == JobState::kRunning && (spec.stream_results() || watch)) {
      bool watching = false;
      (void)AddWatcher(known, route, request_id, &watching);
      reply->mutable_submitted()->set_watching(watching);
    }
    return Status::Ok();
    }
  }
  // Caps first, on the spec's numbers alone: nothing is built for a
  // job that does not fit (a 40-byte template may ask for 50M tasks).
  const std::string& owner = who.owner;
  Status admit = CheckNames(spec);
  if (!admit.ok()) return admit;
  if (admit = core_.CheckAdmission(TaskCountOf(spec)); !admit.ok()) {
    CountRefusal(CoreLimitOf(admit));
    return admit;
  }
  const char* cap = "scheduler.max_jobs_per_owner";
  admit = CheckCaps([&] {
    // Without keys the owner is a stated name: the cap holds per connection too.
    cap = "scheduler.max_jobs_per_owner";
    Status s = admission_.CheckJob(owner, auth_ ? "" : route);
    if (!s.ok() || !spec.stream_results()) return s;
    cap = "scheduler.max_watchers_per_client";
    return admission_.CheckWatch(route);
  });
  if (!admit.ok()) {
    CountRefusal(cap);
    return admit;
  }
  auto def = JobDefFromWire(spec);
  if (!def.ok()) return def.status();
  if (key.empty()) body = DeterministicBytes(spec);
  bool stream = def->stream_results;
  std::string name = def->name;
  uint32_t tasks = def->TaskCount();
  auto id = core_.SubmitJob(std::move(def).value());
  if (!id.ok()) return id.status();
  TC_LOG(Debug) << "job " << *id << " (" << name << ") submitted";
  durability_.JobAccepted(*id, key, body);
  admission_.JobStarted(*id, owner, auth_ ? "" : route);
  // A stream's watch was checked above; a plain watch over the cap is not
  // taken, the job still is (the client's Wait asks with WatchJob then).
  if (stream || watch) {
    bool watching = false;
    (void)AddWatcher(*id, route, request_id, &watching);
    reply->mutable_submitted()->set_watching(watching);
  }
  reply->mutable_submitted()->set_job_id(*id);
  reply->mutable_submitted()->set_tasks(tasks);
  return Status::Ok();
}

Status SchedulerServer::Impl::OnStatus(const wire::GetJobStatus& r, const Caller& who, wire::ClientReply* reply) {
  auto st = OwnedJob(r.job_id(), who);
  if (!st.ok()) return st.status();
  JobStatusToWire(*st, reply->mutable_status());
  return Status::Ok();
}

Status SchedulerServer::Impl::OnCancel(const wire::CancelJob& r, const Caller& who, wire::ClientReply* reply) {
  if (Status s = OwnedJob(r.job_id(), who).status(); !s.ok()) return s;
  auto st = core_.CancelJob(r.job_id(), "cancelled by client");
  if (!st.ok()) return st.status();
  JobStatusToWire(*st, reply->mutable_status());
  return Status::Ok();
}

// One page (ListExecutors in tailcut.proto): O(log fleet + page), so a
// client listing 10,000 executors costs the loop ten short turns, not one
// long one, and no reply nears max_message_bytes.
Status SchedulerServer::Impl::OnListExecutors(const wire::ListExecutors& r, wire::ClientReply* reply) {
  const double now = clock_.Now();
  const size_t limit = r.limit() == 0 ? kExecutorPage : std::min<size_t>(r.limit(), kExecutorPage);
  wire::ExecutorList* list = reply->mutable_executors();
  // One more than the page says whether another follows.
  std::vector<ExecutorStatusInfo> page = core_.Executors(r.after_id(), limit + 1);
  if (page.size() > limit) {
    page.pop_back();
    list->set_next_after_id(page.back().id);
  }
  for (const ExecutorStatusInfo& e : page) ExecutorStatusToWire(e, now, list->add_executors());
  list->set_total(core_.ExecutorCount());
  return Status::Ok();
}

Status SchedulerServer::Impl::OnWatch(const std::string& route, uint64_t request_id, const wire::WatchJob& r,
                                      const Caller& who, wire::ClientReply* reply) {
  const JobId job = r.job_id();
  auto st = OwnedJob(job, who);
  if (!st.ok()) return st.status();
  if (st->state == JobState::kRunning)
    if (Status w = AddWatcher(job, route, request_id); !w.ok()) return w;  // BUSY
  // AddWatcher may have flushed the job's end: answer with the status now.
  if (auto now = core_.JobStatus(job); now.ok()) st = std::move(now);
  JobStatusToWire(*st, reply->mutable_status());
  return Status::Ok();  // the reply carries the current status; the final one is pushed
}

Status SchedulerServer::Impl::OnResults(const wire::GetJobResults& r, const Caller& who, wire::ClientReply* reply) {
  if (Status s = OwnedJob(r.job_id(), who).status(); !s.ok()) return s;
  auto outs = core_.JobOutputs(r.job_id());
  if (!outs.ok()) return outs.status();
  auto* rs = reply->mutable_results();
  rs->set_job_id(r.job_id());
  for (const CommittedOutput& o : *outs) CommittedOutputToWire(o, rs->add_results());
  return Status::Ok();
}

Status SchedulerServer::Impl::OnTrace(const wire::GetJobTrace& r, const Caller& who, wire::ClientReply* reply) {
  const JobId job = r.job_id();
  auto st = OwnedJob(job, who);
  if (!st.ok()) return st.status();
  wire::JobTrace* t = reply->mutable_trace();
  t->set_job_id(job);
  t->set_state(JobStateToWire(st->state));
  t->set_committed(st->committed);
  t->set_ring_rows(recent_trace_.capacity());
  for (const TraceRow& row : recent_trace_.RowsOf(job)) TraceRowToWire(row, t->add_attempts());
  return Status::Ok();
}

// Jobs that ended in this turn free their owner's and watchers' places
// only in Flush; a cap check that fails flushes and asks again, so that a
// cancel followed at once by a submit or a watch is not refused.
Status SchedulerServer::Impl::CheckCaps(const std::function<Status()>& check) {
  Status s = check();
  if (s.ok()) return s;
  Flush();
  return check();
}

// `route` watches running job `job` unless it is at
// scheduler.max_watchers_per_client; `*added` (when given) says whether it
// now does (not over the cap, nor when the job has ended).
Status SchedulerServer::Impl::AddWatcher(JobId job, const std::string& route, uint64_t request_id, bool* added) {
  if (added) *added = false;
  if (Status s = CheckCaps([&] { return admission_.CheckWatch(route); }); !s.ok()) {
    CountRefusal("scheduler.max_watchers_per_client");
    return s;
  }
  // That check may have flushed the job's end: nothing left to watch then
  // (a waiting client reads the final status by polling).
  if (auto st = core_.JobStatus(job); !st.ok() || st->state != JobState::kRunning) return Status::Ok();
  watchers_[job].push_back({route, request_id});
  admission_.WatchAdded(route);
  if (added) *added = true;
  return Status::Ok();
}

void SchedulerServer::Impl::DropWatchersOf(const std::string& route) {
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    auto& list = it->second;
    for (auto w = list.begin(); w != list.end();) {
      if (w->route != route) {
        ++w;
        continue;
      }
      admission_.WatchEnded(route);
      w = list.erase(w);
    }
    it = list.empty() ? watchers_.erase(it) : std::next(it);
  }
}

// --- Held-back replies (docs/LIMITS.md, "Messages and queues") ---
// A client's queue holds client_hwm messages; what it does not take waits
// here, in order, up to client_backlog_bytes per connection. A client
// whose waiting replies would exceed that, or that takes none of them for
// client_stall_s, is disconnected: its replies are dropped, its watches
// end, and the reason is the next message it gets (ZeroMQ's ROUTER cannot
// close one peer's connection; the client is told instead). A client gone
// meanwhile (EHOSTUNREACH) takes nothing: its replies are dropped.

void SchedulerServer::Impl::SendToClient(const std::string& route, zmq::message_t frame) {
  auto it = backlogs_.find(route);
  if (it == backlogs_.end()) {
    if (TrySendClient(route, frame)) return;
    if (opt_.client_backlog_bytes == 0) {  // held back nowhere: dropped, as before
      ++replies_dropped_;
      return;
    }
    it = backlogs_.emplace(route, server_detail::ClientBacklog{}).first;
    it->second.since = clock_.Now();
  }
  server_detail::ClientBacklog& b = it->second;
  if (b.closing) {
    ++replies_dropped_;
    return;
  }
  const uint64_t charge = server_detail::HeldCharge(frame);
  if (b.bytes + charge > opt_.client_backlog_bytes)
    return DisconnectClient(route, b,
                            "it left " + std::to_string(b.bytes + charge) +
                                " bytes of replies unread beyond its queue, over scheduler.client_backlog_bytes = " +
                                std::to_string(opt_.client_backlog_bytes));
  b.bytes += charge;
  b.frames.push_back(std::move(frame));
  ++replies_held_;
}

bool SchedulerServer::Impl::TrySendClient(const std::string& route, zmq::message_t& frame) {
  try {
    if (!clients_.send(zmq::buffer(route), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) return false;
    (void)clients_.send(frame, zmq::send_flags::dontwait);  // the rest of a message goes with its first frame
  } catch (const zmq::error_t& e) {
    if (e.num() != EHOSTUNREACH) TC_LOG(Warn) << "send to a client failed: " << e.what();
    ++replies_dropped_;  // gone: nobody to hold it for
  }
  return true;
}

void SchedulerServer::Impl::FlushClientBacklogs(double now) {
  for (auto it = backlogs_.begin(); it != backlogs_.end();) {
    server_detail::ClientBacklog& b = it->second;
    bool progress = false;
    while (!b.frames.empty() && TrySendClient(it->first, b.frames.front())) {
      b.bytes -= std::min<uint64_t>(b.bytes, server_detail::HeldCharge(b.frames.front()));
      b.frames.pop_front();
      progress = true;
    }
    if (b.frames.empty()) {
      it = backlogs_.erase(it);
      continue;
    }
    // Disconnected, the reason alone waits (one small message) until it is
    // read or the client is gone.
    if (progress) {
      b.since = now;
    } else if (!b.closing && now - b.since >= opt_.client_stall_s) {
      DisconnectClient(it->first, b,
                       "it read none of its " + std::to_string(b.frames.size()) + " waiting replies (" +
                           std::to_string(b.bytes) + " bytes) for " + std::to_string(opt_.client_stall_s) +
                           " s (scheduler.client_stall_s)");
    }
    ++it;
  }
}

void SchedulerServer::Impl::DisconnectClient(const std::string& route, server_detail::ClientBacklog& b,
                                             const std::string& why) {
  ++clients_disconnected_;
  replies_dropped_ += b.frames.size();
  uint64_t held_back = 0;
  if (bad_input_log_.Allow(&held_back))
    TC_LOG(Warn) << "client connection disconnected: " << why << "; its replies are dropped, its watches end"
                 << (held_back ? " (+" + std::to_string(held_back) + " more)" : "");
  DropWatchersOf(route);
  wire::ClientReply bye;
  bye.set_version(kProtocolVersion);
  *bye.mutable_error() = MakeError(wire::Error::BUSY, "disconnected by the scheduler: " + why +
                                                          "; the replies it held were dropped and this "
                                                          "connection's watches ended: ask again (Wait polls)");
  b.frames.clear();
  b.frames.push_back(ToFrame(bye));
  b.bytes = server_detail::HeldCharge(b.frames.back());
  b.closing = true;
  b.since = clock_.Now();
}

}  // namespace tailcut
