#include "parent_link.h"

#include <unistd.h>

#include <algorithm>

#include "tailcut/common/kernel_args.h"
#include "tailcut/common/log.h"
#include "tailcut/common/process.h"
#include "wire_convert.h"

namespace tailcut {
namespace {

constexpr const char* kOwnerPrefix = "parent:";
// Register retries back off from the heartbeat interval up to this.
constexpr double kMaxBackoffS = 5.0;

SessionOptions SessionFor(const ParentOptions& o, uint32_t max_message_bytes) {
  SessionOptions s;
  s.endpoint = o.endpoint;
  s.name = o.name;
  s.peer = "parent";
  s.self = "edge";
  s.heartbeat_ms = o.heartbeat_ms;
  s.register_retry_s = o.heartbeat_ms / 1000.0;
  s.max_backoff_s = kMaxBackoffS;
  s.max_message_bytes = max_message_bytes;  // outputs held for the parent: half of it
  s.keys = {o.key_file, o.parent_key};
  return s;
}

}  // namespace

std::string ParentOwner(const std::string& edge_name) { return kOwnerPrefix + edge_name; }
bool IsParentOwner(const std::string& owner) { return owner.rfind(kOwnerPrefix, 0) == 0; }

ParentLink::ParentLink(ParentOptions options, uint32_t max_message_bytes, zmq::context_t& ctx, Host host)
    : o_(std::move(options)), host_(std::move(host)), quorum_(o_.edge_quorum) {
  if (o_.name.empty()) o_.name = "edge-" + HostName() + "-" + std::to_string(getpid());
  session_ = std::make_unique<ExecutorSession>(SessionFor(o_, max_message_bytes), ctx, Hooks());
}

ParentLink::~ParentLink() = default;

Status ParentLink::Connect() {
  if (Status s = session_->Connect(); !s.ok())
    return s.code() == Status::Code::kIoError ? s : Status::InvalidArgument("parent keys: " + s.message());
  TC_LOG(Info) << "edge " << o_.name << ": parent scheduler at " << o_.endpoint
               << (o_.edge_quorum > 0 ? ", edge quorum " + std::to_string(o_.edge_quorum) : "");
  return Status::Ok();
}

// ------------------------------------------------------------ from above --

void ParentLink::Accept(wire::Assignment& a) {
  const AttemptId id = a.attempt_id();
  if (held_.count(id)) return;  // a repeat: it runs already
  auto refuse = [&](const std::string& why, wire::AttemptResult::Outcome outcome = wire::AttemptResult::REFUSED) {
    wire::AttemptResult* r = session_->Refuse(id, outcome, why);
    r->set_job_id(a.job_id());
    r->set_task_index(a.task_index());
  };
  if (!a.output_dir().empty())  // its promotion would need this edge's executors' disks: it never runs here
    return refuse("edge " + o_.name + ": jobs with output_dir do not run through an edge scheduler (docs/EDGE.md)",
                  wire::AttemptResult::FAILED);
  if (a.inputs_size() > 0)  // the edge's own job could not name the parent's upstream outputs
    return refuse("edge " + o_.name + ": tasks with inputs do not run through an edge scheduler (docs/EDGE.md)",
                  wire::AttemptResult::FAILED);
  if (held_.size() >= o_.max_tasks)
    return refuse("edge " + o_.name + " holds " + std::to_string(held_.size()) +
                  " parent tasks, scheduler.parent_max_tasks = " + std::to_string(o_.max_tasks));
  wire::JobSpec spec;
  spec.set_name("parent job " + std::to_string(a.job_id()) + " task " + std::to_string(a.task_index()));
  wire::TaskSpec* t = spec.add_tasks();
  t->set_kernel(std::move(*a.mutable_kernel()));
  // The parent's index and count, not the one-task local job's.
  t->set_args(a.args_template() ? ExpandTaskArgs(a.args(), a.task_index(), a.task_count())
                                : std::move(*a.mutable_args()));
  *t->mutable_demand() = a.demand();
  if (a.has_share()) *t->mutable_share() = a.share();  // the parent's share of a divisible job, run as is
  t->set_idempotent(a.idempotent());                   // the parent decided; the edge's policies obey it too
  spec.set_stream_results(true);                       // the commit comes back as TaskCommittedCmd with its output
  spec.set_owner(ParentOwner(o_.name));
  auto local = host_.submit(std::move(spec));
  if (!local.ok()) return refuse("edge " + o_.name + ": " + local.status().message());
  Held h;
  h.local = *local;
  h.parent_job = a.job_id();
  h.task = a.task_index();
  held_.emplace(id, std::move(h));
  by_local_job_[*local] = id;
  quorum_.Received(a.job_id());
}

void ParentLink::CancelFromParent(AttemptId a) {
  auto it = held_.find(a);
  if (it == held_.end()) return;
  JobId local = it->second.local;
  Forget(a);  // before cancelling: its JobFinished is then not reported
  host_.cancel(local, "cancelled by the parent scheduler");
}

// Drops what the link holds for parent attempt `a`.
void ParentLink::Forget(AttemptId a) {
  auto it = held_.find(a);
  if (it == held_.end()) return;
  by_local_job_.erase(it->second.local);
  for (AttemptId l : it->second.local_attempts) by_local_attempt_.erase(l);
  quorum_.Released(it->second.parent_job);
  held_.erase(it);
}

void ParentLink::AddResult(AttemptId a, const Held& h, wire::AttemptResult::Outcome outcome, std::string output,
                           std::string error, double run_s) {
  wire::AttemptResult r;
  r.set_attempt_id(a);
  r.set_outcome(outcome);
  r.set_output(std::move(output));
  r.set_error(std::move(error));
  r.set_run_s(run_s);
  r.set_job_id(h.parent_job);
  r.set_task_index(h.task);
  // Held for the parent under the session's cap (half a message), so a long
  // parent outage cannot grow the edge's memory.
  session_->AddResult(&r);
}

void ParentLink::OnCommand(const Command& c) {
  if (auto* l = std::get_if<LaunchCmd>(&c)) {
    auto it = by_local_job_.find(l->job);
    if (it == by_local_job_.end()) return;
    held_[it->second].local_attempts.push_back(l->attempt);
    by_local_attempt_[l->attempt] = it->second;
  } else if (auto* tc = std::get_if<TaskCommittedCmd>(&c)) {
    auto it = by_local_job_.find(tc->job);
    if (it == by_local_job_.end()) return;
    AttemptId a = it->second;
    Held& h = held_.at(a);
    uint64_t parent_job = h.parent_job;
    // The committed attempt's own run time: the parent's predictors then
    // see this edge as fast as the device that ran it.
    AddResult(a, h, wire::AttemptResult::OK, tc->output, "", tc->run_s);
    quorum_.Committed(parent_job);
    Forget(a);
    MaybeCloseEdgeQuorum(parent_job);
  } else if (auto* f = std::get_if<JobFinishedCmd>(&c)) {
    auto it = by_local_job_.find(f->job);
    if (it == by_local_job_.end()) return;  // committed (reported) or cancelled by the parent
    AttemptId a = it->second;
    // Failed here after the edge's own retries: one failed attempt for the
    // parent. Cancelled here (a shutdown, a time limit): handed back.
    auto outcome = f->state == JobState::kFailed ? wire::AttemptResult::FAILED : wire::AttemptResult::REFUSED;
    AddResult(a, held_.at(a), outcome, "", "edge " + o_.name + ": " + f->reason, 0);
    Forget(a);
  }
}

// The edge quorum (tailcut/core/edge_quorum.h, the simulator's rule too).
void ParentLink::MaybeCloseEdgeQuorum(uint64_t parent_job) {
  const std::optional<EdgeQuorum::Counts> counts = quorum_.Close(parent_job);
  if (!counts) return;
  std::vector<AttemptId> rest;
  for (auto& [a, h] : held_)
    if (h.parent_job == parent_job) rest.push_back(a);
  std::sort(rest.begin(), rest.end());  // a deterministic order for the log and the parent
  const std::string why = "edge quorum: edge " + o_.name + " closed its part of job " + std::to_string(parent_job) +
                          " at " + std::to_string(counts->committed) + " of " + std::to_string(counts->received) +
                          " tasks; handed back";
  for (AttemptId a : rest) {
    const Held h = held_.at(a);
    AddResult(a, h, wire::AttemptResult::REFUSED, "", why, 0);
    Forget(a);
    host_.cancel(h.local, why);
  }
  TC_LOG(Debug) << why << " (" << rest.size() << ")";
}

void ParentLink::OnLocalReport(const wire::Report& r) {
  for (const wire::AttemptStarted& s : r.started()) {
    auto it = by_local_attempt_.find(s.attempt_id());
    if (it == by_local_attempt_.end()) continue;
    Held& h = held_.at(it->second);
    if (h.started) continue;
    h.started = true;
    session_->AddStarted(it->second);
  }
  for (const wire::AttemptProgress& p : r.progress()) {
    auto it = by_local_attempt_.find(p.attempt_id());
    if (it == by_local_attempt_.end() || !(p.fraction() >= 0 && p.fraction() <= 1)) continue;
    Held& h = held_.at(it->second);
    h.progress = std::max(h.progress, p.fraction());  // the most advanced copy
  }
}

// ------------------------------------------------------------- upward --

ExecutorSession::Hooks ParentLink::Hooks() {
  ExecutorSession::Hooks h;
  h.offer = [this](wire::Register* reg) { return Offer(reg); };
  h.work = [this](wire::Work* w) {
    for (wire::Assignment& a : *w->mutable_assign()) Accept(a);
    for (uint64_t id : w->cancel()) CancelFromParent(id);
  };
  h.report = [this](wire::Report* r, bool heartbeat) {
    if (heartbeat) HeartbeatReport(r);
  };
  h.registered = [this](const wire::RegisterAck& ack, bool first) {
    if (first || !ever_registered_)
      TC_LOG(Info) << "registered with the parent as executor " << ack.executor_id() << " (" << registered_fleet_.slots
                   << " slots of " << registered_fleet_.executors << " executors)";
    ever_registered_ = true;
  };
  h.holding = [this] { return std::to_string(held_.size()) + " parent tasks (local clients are served as before)"; };
  return h;
}

// The fleet as one executor, and what we hold: the parent adopts what it
// still wants. Nothing to offer without executors.
bool ParentLink::Offer(wire::Register* reg) {
  FleetSummary fleet = host_.fleet();
  if (fleet.slots == 0) return false;
  reg->set_cpu_slots(fleet.slots);
  for (uint32_t i = 0; i < fleet.gpus; ++i) {
    wire::GpuInfo* g = reg->add_gpus();
    g->set_index(i);
    g->set_name("edge fleet GPU");
  }
  (*reg->mutable_labels())["tier"] = "edge";
  for (const std::string& k : fleet.kernels) {
    reg->add_kernels(k);
    if (!std::binary_search(fleet.side_effect_kernels.begin(), fleet.side_effect_kernels.end(), k))
      reg->add_idempotent_kernels(k);
  }
  for (const auto& [a, h] : held_) {
    wire::HeldAttempt* x = reg->add_running();
    x->set_attempt_id(a);
    x->set_job_id(h.parent_job);
    x->set_task_index(h.task);
    x->set_started(h.started);
  }
  registered_fleet_ = std::move(fleet);
  return true;
}

// The heartbeat: progress of the parent's tasks and the load.
void ParentLink::HeartbeatReport(wire::Report* r) {
  uint32_t running = 0;
  for (const auto& [a, h] : held_) {
    running += h.started;
    if (h.progress < 0) continue;
    wire::AttemptProgress* p = r->add_progress();
    p->set_attempt_id(a);
    p->set_fraction(h.progress);
  }
  r->mutable_signals()->set_load(registered_fleet_.slots ? static_cast<double>(running) / registered_fleet_.slots : 0);
}

void ParentLink::Tick(double now) {
  if (session_->HeartbeatDue(now)) {
    FleetSummary fleet = host_.fleet();
    if (fleet.slots == 0 && registered_fleet_.slots > 0) {
      // No executor left: the parent re-places what we held at once.
      TC_LOG(Warn) << "edge fleet empty: leaving the parent until executors return";
      std::vector<AttemptId> all;
      for (auto& [a, h] : held_) all.push_back(a);
      for (AttemptId a : all) CancelFromParent(a);
      session_->Leave("edge has no executors", now);
      registered_fleet_ = FleetSummary{};
      return;
    }
    if (fleet != registered_fleet_) {
      TC_LOG(Info) << "edge fleet changed (" << registered_fleet_.slots << " -> " << fleet.slots
                   << " slots): registering again with the parent";
      session_->Reregister(now);
      return;
    }
  }
  session_->Tick(now);
}

void ParentLink::Shutdown() { session_->Goodbye("edge scheduler shutting down", 500); }

}  // namespace tailcut
