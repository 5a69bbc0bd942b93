#include "queue_room.h"

namespace tailcut::core {

void QueueRoom::Add(ExecutorId id, uint32_t key) {
  if (ids_.size() == cap_) Rebuild(std::max<size_t>(64, 2 * cap_));
  pos_[id] = static_cast<uint32_t>(ids_.size());
  ids_.push_back(id);
  SetAt(ids_.size() - 1, key);
}

void QueueRoom::Set(ExecutorId id, uint32_t key) {
  if (const uint32_t* p = pos_.Find(id)) SetAt(*p, key);
}

void QueueRoom::Remove(ExecutorId id) {
  const uint32_t* p = pos_.Find(id);
  if (!p) return;
  SetAt(*p, kNever);
  pos_.Erase(id);
  if (++removed_ > 64 && 2 * removed_ > ids_.size()) Rebuild(cap_);
}

void QueueRoom::SetAt(size_t pos, uint32_t key) {
  size_t node = cap_ + pos;
  if (tree_[node] == key) return;
  tree_[node] = key;
  for (node /= 2; node > 0; node /= 2) {
    const uint32_t m = std::min(tree_[2 * node], tree_[2 * node + 1]);
    if (tree_[node] == m) break;  // nothing above changes
    tree_[node] = m;
  }
}

// Keeps the ids still present (and their keys) in a tree of `capacity`
// leaves or more.
void QueueRoom::Rebuild(size_t capacity) {
  std::vector<ExecutorId> ids;
  std::vector<uint32_t> keys;
  ids.reserve(ids_.size() - removed_);
  for (size_t p = 0; p < ids_.size(); ++p) {
    if (!pos_.Find(ids_[p])) continue;
    ids.push_back(ids_[p]);
    keys.push_back(tree_[cap_ + p]);
  }
  cap_ = 1;
  while (cap_ < std::max(capacity, ids.size())) cap_ *= 2;
  tree_.assign(2 * cap_, kNever);
  for (size_t p = 0; p < ids.size(); ++p) {
    pos_[ids[p]] = static_cast<uint32_t>(p);
    tree_[cap_ + p] = keys[p];
  }
  for (size_t node = cap_ - 1; node > 0; --node) tree_[node] = std::min(tree_[2 * node], tree_[2 * node + 1]);
  ids_ = std::move(ids);
  removed_ = 0;
}

size_t QueueRoom::FirstAtMost(size_t from, size_t to, uint32_t max_key) const {
  if (from >= to) return to;
  const size_t p = Find(1, 0, cap_, from, to, max_key);
  return p < to ? p : to;
}

// Leftmost leaf in [from, to) under `node` (covering [lo, hi)) with a key
// <= max_key: O(log leaves), a subtree whose minimum is above max_key is
// never entered.
size_t QueueRoom::Find(size_t node, size_t lo, size_t hi, size_t from, size_t to, uint32_t max_key) const {
  if (hi <= from || lo >= to || tree_[node] > max_key) return to;
  if (hi - lo == 1) return lo;
  const size_t mid = lo + (hi - lo) / 2;
  const size_t left = Find(2 * node, lo, mid, from, to, max_key);
  return left < to ? left : Find(2 * node + 1, mid, hi, from, to, max_key);
}

}  // namespace tailcut::core
