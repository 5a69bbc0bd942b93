// The turn's messages out, batched (server_dispatch.cpp): a WorkBatcher
// gathers the launches, cancels and promotions for each executor into its
// Work messages, a ClientPusher the committed results and final statuses
// for each watched job. Each message is kept under the receiver's
// max_message_bytes: ZeroMQ drops the connection of a peer that sends a
// larger frame, so a large batch is split instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "tailcut.pb.h"
#include "tailcut/core/types.h"
#include "tailcut/wire/wire.h"
#include "wire_convert.h"

namespace tailcut {

// The messages of one kind for one peer in one turn, each under `budget`
// bytes; an item larger than the budget alone gets a message of its own.
// Messages of at most `budget` bytes each, made on `arena` (null: on the
// heap, owned here), in the order made.
template <typename Msg>
class Batches {
 public:
  Batches(size_t budget, google::protobuf::Arena* arena = nullptr) : budget_(budget), arena_(arena) {}
  // The message to add an item of about `bytes` to.
  Msg& For(size_t bytes) {
    if (msgs_.empty() || (used_ > 0 && used_ + bytes > budget_)) {
      if (arena_) {
        msgs_.push_back(google::protobuf::Arena::CreateMessage<Msg>(arena_));
      } else {
        msgs_.push_back(&owned_.emplace_back());
      }
      used_ = 0;
    }
    used_ += bytes;
    return *msgs_.back();
  }
  const std::vector<Msg*>& messages() const { return msgs_; }

 private:
  size_t budget_;
  google::protobuf::Arena* arena_;
  size_t used_ = 0;
  std::vector<Msg*> msgs_;
  std::deque<Msg> owned_;  // without an arena
};

// Room kept in every message for what Batches does not count (envelope,
// version, ids), and a bound on one batched item's own fields.
inline constexpr size_t kMessageHeadroom = 4096;
inline constexpr size_t kItemOverhead = 64;
// What one message may carry for a receiver that takes max_message_bytes.
size_t BatchBudget(uint64_t max_message_bytes);

// One executor's Work, and one batch list per executor.
class WorkBatcher {
 public:
  using ByExecutor = std::unordered_map<ExecutorId, Batches<wire::SchedulerToExecutor>>;
  explicit WorkBatcher(uint64_t max_message_bytes) : budget_(BatchBudget(max_message_bytes)) {}
  WorkBatcher(const WorkBatcher&) = delete;
  WorkBatcher& operator=(const WorkBatcher&) = delete;
  // Moves the launch's spec into its executor's Work; false (nothing
  // added) when the launch has none (LaunchCmd::spec).
  bool Launch(LaunchCmd&& l);
  void Cancel(const CancelCmd& c);
  // To executor `e`, on the attempt's host.
  void Promote(const PromoteCmd& c, ExecutorId e);
  ByExecutor& by_executor() { return work_; }

 private:
  Batches<wire::SchedulerToExecutor>& For(ExecutorId e) { return work_.try_emplace(e, budget_, &arena_).first->second; }
  size_t budget_;
  // Performance: a turn's Work is built on one arena, freed at once with
  // it: no malloc and free per assignment and per field (issue 41).
  google::protobuf::Arena arena_;
  ByExecutor work_;
};

struct Watcher {
  std::string route;
  uint64_t request_id;
};
using Watchers = std::unordered_map<JobId, std::vector<Watcher>>;

// What the watchers of jobs hear this turn: committed results (streamed
// jobs), then final statuses.
class ClientPusher {
 public:
  explicit ClientPusher(uint64_t max_message_bytes) : budget_(BatchBudget(max_message_bytes)) {}
  // The output is moved out.
  void Committed(TaskCommittedCmd&& c);
  void Finished(const JobFinishedCmd& f) { finished_.push_back(f); }
  const std::vector<JobFinishedCmd>& finished() const { return finished_; }
  // Sends every message to each watcher of its job (send(route, reply));
  // a finished job's watchers are told its status, then dropped from
  // `watchers` (ended(route) for each).
  template <typename Send, typename Ended>
  void Push(Watchers& watchers, const Send& send, const Ended& ended);

 private:
  size_t budget_;
  std::unordered_map<JobId, Batches<wire::ClientReply>> results_;
  std::vector<JobFinishedCmd> finished_;
};

template <typename Send, typename Ended>
void ClientPusher::Push(Watchers& watchers, const Send& send, const Ended& ended) {
  for (auto& [job, batch] : results_) {
    auto it = watchers.find(job);
    if (it == watchers.end()) continue;
    for (wire::ClientReply* reply : batch.messages()) {
      reply->set_version(kProtocolVersion);
      for (const Watcher& w : it->second) {
        reply->set_request_id(w.request_id);
        send(w.route, *reply);
      }
    }
  }
  for (const JobFinishedCmd& f : finished_) {
    auto it = watchers.find(f.job);
    if (it == watchers.end()) continue;
    wire::ClientReply reply;
    reply.set_version(kProtocolVersion);
    JobStatusToWire(f.status, reply.mutable_status());  // the job may be evicted by now
    for (const Watcher& w : it->second) {
      reply.set_request_id(w.request_id);
      send(w.route, reply);
      ended(w.route);
    }
    watchers.erase(it);
  }
}

}  // namespace tailcut
