// QueueRoom: the executors that may queue one more attempt behind their
// running work, found in round-robin order without a walk of the fleet
// (Placement::PickQueue; issue 41).
//
// Each executor has a key: the fewest attempts queued per slot at which one
// more attempt fits it (CoreState::QueueKey; kNever while it takes none). A
// job pipelining `p` per slot fits only executors whose key is <= p, so
// Next(after, p, fits) visits those, in id order from the first id after
// `after` round to `after` itself, and returns the first that `fits` (the
// caller's full test: slots for the task's need, devices, kernel, advice).
// That is the executor a walk of every executor in the same order would
// return, in O(log executors) per one visited: a min-tree over the ids in
// order. With every queue full at 10,000 executors, the walk passed the
// whole fleet per placement and once more per pump.
//
// Ids come in increasing (Lifecycle::AddExecutor hands them out so); one
// removed keeps its place with kNever until more than half are removed
// ones, then the index is rebuilt. Memory: O(executors registered since).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "tailcut/common/executor_map.h"
#include "tailcut/common/ids.h"

namespace tailcut::core {

class QueueRoom {
 public:
  static constexpr uint32_t kNever = std::numeric_limits<uint32_t>::max();

  // `id` is larger than every id added before.
  void Add(ExecutorId id, uint32_t key);
  // A no-op for an id not added (or removed).
  void Set(ExecutorId id, uint32_t key);
  void Remove(ExecutorId id);
  size_t size() const { return ids_.size() - removed_; }

  template <typename Fits>
  ExecutorId Next(ExecutorId after, uint32_t max_key, Fits&& fits) {
    const size_t n = ids_.size();
    // Round robin asks after the id it returned last: its position is kept.
    const size_t start = last_ < n && ids_[last_] == after
                             ? last_ + 1
                             : std::upper_bound(ids_.begin(), ids_.end(), after) - ids_.begin();
    // The next few leaves first, in order: while queues have room the next
    // executor takes the task, and the tree's descent would cost more.
    const size_t near = std::min(n, start + kNear);
    for (size_t p = start; p < near; ++p)
      if (tree_[cap_ + p] <= max_key && fits(ids_[p])) return Found(p);
    for (size_t p = FirstAtMost(near, n, max_key); p < n; p = FirstAtMost(p + 1, n, max_key))
      if (fits(ids_[p])) return Found(p);
    for (size_t p = FirstAtMost(0, start, max_key); p < start; p = FirstAtMost(p + 1, start, max_key))
      if (fits(ids_[p])) return Found(p);
    return 0;
  }

 private:
  static constexpr size_t kNear = 8;
  ExecutorId Found(size_t p) {
    last_ = p;
    return ids_[p];
  }
  // The first position in [from, to) whose key is <= max_key; `to` when none.
  size_t FirstAtMost(size_t from, size_t to, uint32_t max_key) const;
  size_t Find(size_t node, size_t lo, size_t hi, size_t from, size_t to, uint32_t max_key) const;
  void SetAt(size_t pos, uint32_t key);
  void Rebuild(size_t capacity);

  std::vector<ExecutorId> ids_;  // in id order; removed ones stay (key kNever) until a rebuild
  ExecutorMap<uint32_t> pos_;    // id -> its position in ids_
  std::vector<uint32_t> tree_;   // min-tree: leaves at cap_ + position
  size_t cap_ = 0;               // leaves (a power of two)
  size_t removed_ = 0;
  size_t last_ = 0;  // position Next returned last (checked before use: a rebuild moves ids)
};

}  // namespace tailcut::core
