// The core's commands out (server_impl.h). The commands carry all they
// need (LaunchCmd::spec): this file never asks the core back while it
// flushes. Launches, cancels and promotions go to a WorkBatcher, results
// and final statuses to a ClientPusher (work_batcher.h); what must be
// durable first was journaled by the JournalSink as the core made it, and
// is committed before the Work goes out.
#include <poll.h>

#include <cerrno>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "server_impl.h"
#include "tailcut/common/log.h"
#include "tailcut/wire/wire.h"

namespace tailcut {

void SchedulerServer::Impl::SendWork(WorkBatcher& work) {
  for (auto& [e, batch] : work.by_executor()) {
    auto p = peers_.find(e);
    if (p == peers_.end()) continue;
    for (wire::SchedulerToExecutor* msg : batch.messages()) {
      msg->set_version(kProtocolVersion);
      msg->mutable_work()->set_term(LeadTerm());
      Send(executors_, p->second.route, *msg);
    }
    p->second.last_sent = clock_.Now();
    work_sent_ = true;
  }
}

// A one-task job used to wait on two group commits in a row: the accept's,
// during which its executor's Report came back, then the result's in the
// next turn (docs/SCALE.md). Here a turn that holds client replies and sent
// Work waits, up to commit_linger_s, for the first executor frame, reads it
// and takes the commands it caused, so the result joins the accept's
// commit; every reply still goes out after the commit that makes it
// durable. A client frame ends the wait (its turn comes at once), and so
// does the bound: the wait costs a submit reply at most commit_linger_s.
// It sleeps in ppoll on the sockets' descriptors (ZMQ_FD, with ZMQ_EVENTS
// asked before each sleep, as zmq_getsockopt says), not in a spin.
bool SchedulerServer::Impl::LingerForReports() {
  const bool sent = std::exchange(work_sent_, false);
  if (!sent || opt_.commit_linger_s <= 0 || replicas_ || !durability_.journaled() || !durability_.holding() ||
      !Reading(kFromExecutors))
    return false;
  const double until = clock_.Now() + opt_.commit_linger_s;
  pollfd fds[2] = {{executors_.get(zmq::sockopt::fd), POLLIN, 0}, {clients_.get(zmq::sockopt::fd), POLLIN, 0}};
  for (;;) {
    if (executors_.get(zmq::sockopt::events) & ZMQ_POLLIN) break;
    if (clients_.get(zmq::sockopt::events) & ZMQ_POLLIN) return false;
    const double left = until - clock_.Now();
    if (left <= 0) return false;
    const timespec ts{0, static_cast<long>(left * 1e9)};
    if (ppoll(fds, 2, &ts, nullptr) < 0 && errno != EINTR) return false;
  }
  DrainExecutors();
  Flush();
  work_sent_ = false;  // no second wait in one turn
  return true;
}

// The executor that ran the attempt, else one on its host; 0 when none is connected.
ExecutorId SchedulerServer::Impl::PromoterFor(const PromoteCmd& c) const {
  if (auto p = peers_.find(c.executor); c.executor && p != peers_.end() && p->second.host == c.host) return c.executor;
  for (const auto& [id, peer] : peers_)
    if (peer.host == c.host) return id;
  return 0;
}

void SchedulerServer::Impl::QueuePromote(const PromoteCmd& c, double now, WorkBatcher* work) {
  if (ExecutorId e = PromoterFor(c)) {
    work->Promote(c, e);
    promote_sent_[{c.job, c.task}] = now;
  }
}

// Promotions not answered within kPromoteResendS (lost, or their executor left): again.
void SchedulerServer::Impl::ResendPromotions(double now) {
  if (now < next_promote_check_) return;
  next_promote_check_ = now + kPromoteResendS / 2;
  WorkBatcher work(opt_.max_message_bytes);
  for (const PromoteCmd& c : core_.PendingPromotions()) {
    auto sent = promote_sent_.find({c.job, c.task});
    if (sent == promote_sent_.end() || now - sent->second >= kPromoteResendS) QueuePromote(c, now, &work);
  }
  SendWork(work);
}

// The core declared an executor lost: its next message registers it anew.
void SchedulerServer::Impl::ForgetPeer(ExecutorId e) {
  if (auto p = peers_.find(e); p != peers_.end()) {
    by_route_.erase(p->second.route);
    peers_.erase(p);
  }
}

// Sends the core's commands, batched: one Work per executor and one
// TaskResults per watched job.
void SchedulerServer::Impl::Flush() {
  commands_.clear();
  {
    HeldClock::Scope one_reading(core_clock_);  // the turn's launches go out together
    core_.TakeCommands(&commands_);
  }
  if (commands_.empty()) return;
  if (parent_)
    for (const Command& c : commands_) parent_->OnCommand(c);
  const double now = clock_.Now();
  WorkBatcher work(opt_.max_message_bytes);
  ClientPusher push(opt_.max_message_bytes);
  for (auto& c : commands_) {
    if (auto* l = std::get_if<LaunchCmd>(&c)) {
      if (!l->error.empty()) TC_LOG(Error) << "job " << l->job << " task " << l->task << ": " << l->error;
      work.Launch(std::move(*l));
    } else if (auto* x = std::get_if<CancelCmd>(&c)) {
      if (peers_.count(x->executor)) work.Cancel(*x);
    } else if (auto* tc = std::get_if<TaskCommittedCmd>(&c)) {
      if (watchers_.count(tc->job)) push.Committed(std::move(*tc));
    } else if (auto* ec = std::get_if<ExecutorChangedCmd>(&c)) {
      if (ec->change == ExecutorChangedCmd::Change::kLost) ForgetPeer(ec->executor);
    } else if (auto* f = std::get_if<JobFinishedCmd>(&c)) {
      push.Finished(*f);
    } else if (auto* pc = std::get_if<PromoteCmd>(&c)) {
      QueuePromote(*pc, now, &work);
    }
  }
  durability_.BeforeWorkGoesOut();
  SendWork(work);
  for (const JobFinishedCmd& f : push.finished()) {
    admission_.JobFinished(f.job);
    durability_.keys().Finished(f.job, now);
  }
  push.Push(
      watchers_, [this](const std::string& route, const wire::ClientReply& r) { SendClient(route, r); },
      [this](const std::string& route) { admission_.WatchEnded(route); });
}

}  // namespace tailcut
