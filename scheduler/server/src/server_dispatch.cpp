// The core's commands out (server_impl.h): launches and cancels batched
// into one Work per executor, commits into one TaskResults per watched job,
// final statuses to the job's watchers; each message kept under the
// receiver's max_message_bytes.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "server_impl.h"
#include "tailcut/common/log.h"
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

using Work = std::unordered_map<ExecutorId, Batches<wire::SchedulerToExecutor>>;

size_t Budget(uint64_t max_message_bytes) {
  return std::max<size_t>(max_message_bytes, 2 * kMessageHeadroom) - kMessageHeadroom;
}

// Adds `c` to the Work of executor `e`.
void QueuePromote(const PromoteCmd& c, ExecutorId e, size_t budget, Work* work) {
  wire::Promote* p =
      work->try_emplace(e, budget).first->second.For(c.output_dir.size() + kItemOverhead).mutable_work()->add_promote();
  p->set_job_id(c.job);
  p->set_task_index(c.task);
  p->set_attempt_id(c.attempt);
  p->set_output_dir(c.output_dir);
}

}  // namespace

template <typename WorkBatches>
void SchedulerServer::Impl::SendWork(std::unordered_map<ExecutorId, WorkBatches>* work) {
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

// The executor that ran the attempt, else one on its host; 0 when none is connected.
ExecutorId SchedulerServer::Impl::PromoterFor(const PromoteCmd& c) const {
  if (auto p = peers_.find(c.executor); c.executor && p != peers_.end() && p->second.host == c.host) return c.executor;
  for (const auto& [id, peer] : peers_)
    if (peer.host == c.host) return id;
  return 0;
}

// Promotions not answered within kPromoteResendS (lost, or their executor left): again.
void SchedulerServer::Impl::ResendPromotions(double now) {
  if (now < next_promote_check_) return;
  next_promote_check_ = now + kPromoteResendS / 2;
  Work work;
  for (const PromoteCmd& c : core_.PendingPromotions()) {
    auto sent = promote_sent_.find({c.job, c.task});
    if (sent != promote_sent_.end() && now - sent->second < kPromoteResendS) continue;
    if (ExecutorId e = PromoterFor(c)) {
      QueuePromote(c, e, Budget(opt_.max_message_bytes), &work);
      promote_sent_[{c.job, c.task}] = now;
    }
  }
  SendWork(&work);
}

// Sends the core's commands, batched: one Work per executor and one
// TaskResults per watched job.
void SchedulerServer::Impl::Flush() {
  commands_.clear();
  core_.TakeCommands(&commands_);
  if (commands_.empty()) return;
  if (parent_)
    for (const Command& c : commands_) parent_->OnCommand(c);
  Work work;
  std::unordered_map<JobId, Batches<wire::ClientReply>> results;
  std::vector<JobFinishedCmd> finished;
  bool to_commit = false;  // new shares or promotions: durable before the Work goes out
  const size_t budget = Budget(opt_.max_message_bytes);
  for (auto& c : commands_) {
    if (auto* l = std::get_if<LaunchCmd>(&c)) {
      if (dashboard_) dashboard_->OnLaunch(*l, core_, clock_.Now());
      const TaskDef* t = core_.TaskOf(l->job, l->task);
      if (!t) continue;  // its job ended and was evicted this turn; the attempt's cancel follows
      size_t input_bytes = 0;
      if (!t->inputs.empty()) {
        // Resolved as it is placed. The core checked them when the job
        // became runnable and holds its parents until it ends, so this
        // cannot fail; if it did, the attempt is not sent (never with
        // inputs missing) and its time limit ends it.
        if (Status s = core_.TaskInputs(l->job, l->task, &inputs_); !s.ok()) {
          TC_LOG(Error) << "job " << l->job << " task " << l->task << ": " << s.message();
          continue;
        }
        for (const ResolvedInput& r : inputs_) input_bytes += r.output->size() + r.path.size() + kItemOverhead;
      }
      auto& batch = work.try_emplace(l->executor, budget).first->second;
      wire::Assignment* a =
          batch.For(t->args.size() + t->kernel.size() + input_bytes + kItemOverhead).mutable_work()->add_assign();
      LaunchToWire(*l, *t, a);
      if (!t->inputs.empty()) InputsToWire(inputs_, a);
      if (const JobDef* def = core_.JobDefOf(l->job); def && !def->output_dir.empty())
        a->set_output_dir(def->output_dir);
      // Durable before any executor runs a share (Work goes out below).
      std::vector<uint64_t> counts;
      AttemptId since = 0;
      if (l->share.divisible() && durability_.journaled() && shares_journaled_.insert(l->job).second &&
          core_.FixedShares(l->job, &counts, &since)) {
        durability_.SharesFixed(l->job, counts, since);
        to_commit = true;
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
    } else if (auto* pc = std::get_if<PromoteCmd>(&c)) {
      durability_.PromotionPending(pc->job, pc->task, pc->attempt, pc->host);
      to_commit |= durability_.journaled();
      if (ExecutorId e = PromoterFor(*pc)) {
        QueuePromote(*pc, e, budget, &work);
        promote_sent_[{pc->job, pc->task}] = clock_.Now();
      }
    }
  }
  // One transaction for all of this turn's new shares, promotions and launches that must not run twice.
  if (to_commit || durability_.launch_must_be_durable()) durability_.CommitNow();
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
