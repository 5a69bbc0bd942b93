// The edge quorum (`scheduler.edge_quorum`, docs/EDGE.md "Two tiers"): an
// edge closes its part of a parent job once this share of the job's tasks
// that reached it have committed; the tasks of that job it still holds are
// then cancelled here and handed back to the parent. One rule for the live
// edge (the server's parent link) and the simulated one (sim/src/two_tier.cpp).
//
// Not thread-safe: the driver loop that owns it calls it.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace tailcut {

class EdgeQuorum {
 public:
  struct Counts {
    uint32_t received = 0;   // tasks of the job that reached this edge
    uint32_t committed = 0;  // ... of which committed here
    uint32_t held = 0;       // ... still held here
  };

  // `share` in [0, 1]; 0 = never close. The last `closed_memory` closed jobs
  // are remembered, so their tasks that arrive later run without a second
  // close (nothing bounces for ever) while the memory stays bounded.
  explicit EdgeQuorum(double share, size_t closed_memory = 4096) : share_(share), memory_(closed_memory) {}

  // A task of parent job `job` arrived and is held here.
  void Received(uint64_t job) {
    Counts& c = groups_[job];
    ++c.received;
    ++c.held;
  }
  // A held task of `job` committed here (Released follows for it).
  void Committed(uint64_t job) {
    if (auto it = groups_.find(job); it != groups_.end()) ++it->second.committed;
  }
  // A task of `job` is no longer held here: committed, failed, cancelled
  // or handed back.
  void Released(uint64_t job) {
    if (auto it = groups_.find(job); it != groups_.end() && --it->second.held == 0) groups_.erase(it);
  }

  // Whether the edge closes its part of `job` now (on, not closed before,
  // tasks still held, the committed share reached): then the counts at the
  // close, and the close is remembered.
  std::optional<Counts> Close(uint64_t job) {
    if (share_ <= 0 || closed_.count(job)) return std::nullopt;
    auto it = groups_.find(job);
    if (it == groups_.end()) return std::nullopt;  // nothing left here to close
    const Counts c = it->second;
    if (c.committed < std::ceil(share_ * c.received - 1e-9)) return std::nullopt;
    closed_.insert(job);
    order_.push_back(job);
    if (order_.size() > memory_) {
      closed_.erase(order_.front());
      order_.pop_front();
    }
    return c;
  }

 private:
  double share_;
  size_t memory_;
  std::unordered_map<uint64_t, Counts> groups_;  // parent job -> counts, while any task of it is held
  std::unordered_set<uint64_t> closed_;
  std::deque<uint64_t> order_;  // closed_, oldest first
};

}  // namespace tailcut
