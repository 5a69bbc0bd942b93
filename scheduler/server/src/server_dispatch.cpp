// The core's commands out (server_impl.h): launches and cancels batched
// into one Work per executor, commits into one TaskResults per watched job,
// final statuses to the job's watchers; each message kept under the
// receiver's max_message_bytes.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "server_impl.h"
#include "tailcut/wire/wire.h"

namespace tailcut {
namespace {

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

}  // namespace

// Sends the core's commands, batched: one Work per executor and one
// TaskResults per watched job.
void SchedulerServer::Impl::Flush() {
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
      LaunchToWire(*l, *t, batch.For(t->args.size() + t->kernel.size() + kItemOverhead).mutable_work()->add_assign());
      // Durable before any executor runs a share (Work goes out below).
      std::vector<uint64_t> counts;
      AttemptId since = 0;
      if (l->share.divisible() && durability_.journaled() && shares_journaled_.insert(l->job).second &&
          core_.FixedShares(l->job, &counts, &since)) {
        durability_.SharesFixed(l->job, counts, since);
        shares_to_commit = true;
      }
    } else if (auto* x = std::get_if<CancelCmd>(&c)) {
      if (peers_.count(x->executor))
        work.try_emplace(x->executor, budget).first->second.For(kItemOverhead).mutable_work()->add_cancel(x->attempt);
    } else if (auto* tc = std::get_if<TaskCommittedCmd>(&c)) {
      if (!watchers_.count(tc->job)) continue;
      auto& batch = results.try_emplace(tc->job, budget).first->second;
      auto* rs = batch.For(tc->output.size() + kItemOverhead).mutable_results();
      rs->set_job_id(tc->job);
      TaskCommittedToWire(std::move(*tc), rs->add_results());
    } else if (auto* ec = std::get_if<ExecutorChangedCmd>(&c)) {
      // The core declared it lost; its next message registers it anew.
      if (ec->change == ExecutorChangedCmd::Change::kLost) {
        if (auto p = peers_.find(ec->executor); p != peers_.end()) {
          by_route_.erase(p->second.route);
          peers_.erase(p);
        }
      }
    } else if (auto* f = std::get_if<JobFinishedCmd>(&c)) {
      shares_journaled_.erase(f->job);
      finished.push_back(*f);
    }
  }
  if (shares_to_commit) durability_.CommitNow();  // one transaction for all of this turn's new shares
  for (auto& [e, batch] : work) {
    auto p = peers_.find(e);
    if (p == peers_.end()) continue;
    for (auto& msg : batch.messages()) {
      msg.set_version(kProtocolVersion);
      Send(executors_, p->second.route, msg);
    }
    p->second.last_sent = clock_.Now();
  }
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
    durability_.keys().Finished(f.job, clock_.Now());
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

}  // namespace tailcut
