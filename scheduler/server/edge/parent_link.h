// The edge tier (docs/EDGE.md, "Two tiers"): a scheduler started with a
// parent registers there as ONE executor whose slots are its own fleet's,
// speaks the executor protocol upward, and runs what the parent assigns as
// jobs of its own core (owner "parent:NAME"), with its own policies.
//
//   parent scheduler  <-- Register / Report / Goodbye --  ParentLink (this edge)
//                     --> Work / RegisterAck / Heartbeat -->
//
// Each Assignment becomes a one-task local job; its commit is the parent
// attempt's OK result (with the committed attempt's run time, so the
// parent's predictors see the fleet's speed), a failed local job a FAILED
// result. Optional edge-level quorum (`edge_quorum`): once that share of a
// parent job's tasks held here has committed, this edge closes its part and
// hands the rest back (REFUSED), so the parent can place them elsewhere or
// close its round without them. Loss of the parent never stops the edge: it
// keeps its work and registers again with backoff, listing what it holds,
// exactly like an executor (docs/PROTOCOL.md, "Registering again").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <zmq.hpp>

#include "tailcut.pb.h"
#include "tailcut/common/status.h"
#include "tailcut/core/edge_quorum.h"
#include "tailcut/core/scheduler_core.h"
#include "tailcut/server/server.h"
#include "tailcut/wire/executor_session.h"

namespace tailcut {

// What the edge offers its parent: the sum of its executors' slots and
// GPUs and the union of their kernels. A change re-registers.
struct FleetSummary {
  uint32_t executors = 0;
  uint32_t slots = 0;
  uint32_t gpus = 0;
  std::vector<std::string> kernels;              // sorted, unique
  std::vector<std::string> side_effect_kernels;  // of kernels, not idempotent on some executor; sorted
  bool operator==(const FleetSummary& o) const {
    return slots == o.slots && gpus == o.gpus && kernels == o.kernels && side_effect_kernels == o.side_effect_kernels;
  }
  bool operator!=(const FleetSummary& o) const { return !(*this == o); }
};

// Owner of the local jobs that run the parent's tasks.
std::string ParentOwner(const std::string& edge_name);
bool IsParentOwner(const std::string& owner);

// Not thread-safe: the server's loop owns it.
class ParentLink {
 public:
  // What the server lends the link: submitting into its core (journaled
  // like any job), cancelling, and its fleet as it stands.
  struct Host {
    std::function<StatusOr<JobId>(wire::JobSpec)> submit;
    std::function<void(JobId, const std::string& reason)> cancel;
    std::function<FleetSummary()> fleet;
  };
  ParentLink(ParentOptions options, uint32_t max_message_bytes, zmq::context_t& ctx, Host host);
  ~ParentLink();

  // Creates and connects the socket (keys applied); nothing is sent yet.
  Status Connect();
  zmq::socket_t& socket() { return session_->socket(); }
  const std::string& name() const { return o_.name; }

  // Everything the parent sent; `now` is the server clock, seconds.
  void OnReadable(double now) { session_->OnReadable(now); }
  // Each of the core's commands, before the server acts on it.
  void OnCommand(const Command& c);
  // A local executor's Report: started attempts and progress of the
  // parent's tasks go upward.
  void OnLocalReport(const wire::Report& r);
  // Registering (with backoff), heartbeats with progress, noticing a
  // silent parent, re-registering when the fleet changed.
  void Tick(double now);
  // Sends the started / results gathered this turn.
  void Flush() { session_->Flush(); }
  // Goodbye to the parent (clean shutdown).
  void Shutdown();

  size_t held() const { return held_.size(); }

 private:
  struct Held {
    JobId local = 0;
    uint64_t parent_job = 0;
    uint32_t task = 0;
    bool started = false;
    float progress = -1;
    std::vector<AttemptId> local_attempts;
  };

  ExecutorSession::Hooks Hooks();
  bool Offer(wire::Register* reg);
  void HeartbeatReport(wire::Report* r);
  void Accept(wire::Assignment& a);
  void CancelFromParent(AttemptId a);
  void AddResult(AttemptId a, const Held& h, wire::AttemptResult::Outcome outcome, std::string output,
                 std::string error, double run_s);
  void Forget(AttemptId a);
  void MaybeCloseEdgeQuorum(uint64_t parent_job);

  ParentOptions o_;
  Host host_;
  std::unique_ptr<ExecutorSession> session_;  // the executor side of the protocol, upward
  EdgeQuorum quorum_;

  bool ever_registered_ = false;
  FleetSummary registered_fleet_;

  std::unordered_map<AttemptId, Held> held_;           // parent attempt -> its local job
  std::unordered_map<JobId, AttemptId> by_local_job_;  // local job -> parent attempt
  std::unordered_map<AttemptId, AttemptId> by_local_attempt_;
};

}  // namespace tailcut
