// Hollow executors: protocol-complete executors without a runtime. Each
// one is an ExecutorSession (wire), the executor daemon's side of the
// protocol, with its own DEALER socket (its own connection and routing id,
// keys included): it registers, heartbeats at the interval the scheduler's
// RegisterAck names, takes Work, "runs" each attempt for a sampled time on
// its slots (queueing the rest), honours cancels, re-registers with what it
// holds when the scheduler forgets it, and reports results in batched
// Reports. One HollowGroup is one thread's share of the swarm; it waits on
// the sockets with epoll and on its timers with a heap, so a turn costs
// what is ready, not the size of the group.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "tailcut/wire/security.h"

namespace tailcut::swarm {

struct HollowOptions {
  std::string scheduler = "tcp://127.0.0.1:7700";
  PeerKeys keys;
  std::string name_prefix = "hollow";
  uint32_t slots = 1;
  uint64_t memory_mb = 0;  // Register.memory_mb each (0: does not say)
  uint32_t gpus = 0;       // GPUs each advertises (Register.gpus, marked fake)
  std::vector<std::string> kernels = {"noop", "sleep"};
  // Run time of an attempt: the task's `ms=` argument (0 without one) times
  // a lognormal jitter of this sigma (0 = none).
  double jitter_sigma = 0;
  // Every member whose index % fail_slow_every == 0 (0 = none) runs
  // fail_slow_factor times slower.
  uint32_t fail_slow_every = 0;
  double fail_slow_factor = 10;
  uint64_t seed = 1;
};

struct HollowStats {
  uint64_t registered = 0;        // members holding a RegisterAck now
  uint64_t registrations = 0;     // RegisterAcks received (re-registrations too)
  uint64_t attempts = 0;          // assignments received
  uint64_t results = 0;           // results reported
  uint64_t cancelled = 0;
  uint64_t reports = 0;           // Reports sent (heartbeats included)
  uint64_t heartbeats = 0;        // Reports sent only because the interval passed
  uint64_t received = 0;          // Work and RegisterAcks from the scheduler
  uint32_t max_heartbeat_ms = 0;  // the longest interval an ack named
};

class HollowGroup {
 public:
  // Members first_index .. first_index + count - 1 of the swarm.
  HollowGroup(zmq::context_t& ctx, const HollowOptions& o, uint32_t first_index, uint32_t count);
  ~HollowGroup();
  // Runs until `stop`, then says Goodbye for every registered member.
  void Run(const std::atomic<bool>& stop);
  HollowStats Stats() const;

 private:
  struct Member;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tailcut::swarm
