// A hash map from 64-bit ids (attempt, job or executor ids) to values, in
// one flat table: open addressing with linear probing and backward-shift
// deletion, so an insert or an erase allocates nothing once the table has
// grown (an std::unordered_map allocates and frees a node per entry: per
// attempt, on the scheduler's hot path; issue 41). For maps that are looked
// up more than walked: ForEach visits entries in an order that depends on
// the table's history, so only uses whose result does not depend on the
// order (a sum, a sort after) may walk it. Capacity grows at 3/4 full and never shrinks (as a hash
// map's buckets), so its memory is bounded by the most entries held at
// once.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tailcut {

template <typename V>
class IdMap {
 public:
  // The value of `k`, or null.
  V* Find(uint64_t k) {
    if (k == 0) return has_zero_ ? &zero_ : nullptr;
    if (slots_.empty()) return nullptr;
    for (size_t i = Home(k);; i = (i + 1) & mask_) {
      if (slots_[i].key == k) return &slots_[i].value;
      if (slots_[i].key == 0) return nullptr;
    }
  }
  const V* Find(uint64_t k) const { return const_cast<IdMap*>(this)->Find(k); }
  bool Contains(uint64_t k) const { return Find(k) != nullptr; }

  // The value of `k` and true when it was inserted (value-initialized) now.
  std::pair<V*, bool> TryEmplace(uint64_t k) {
    if (k == 0) {
      const bool fresh = !has_zero_;
      if (fresh) zero_ = V{}, has_zero_ = true;
      return {&zero_, fresh};
    }
    if (4 * (size_ + 1) > 3 * slots_.size()) Grow();
    size_t i = Home(k);
    for (; slots_[i].key != 0; i = (i + 1) & mask_)
      if (slots_[i].key == k) return {&slots_[i].value, false};
    slots_[i].key = k;
    slots_[i].value = V{};
    ++size_;
    return {&slots_[i].value, true};
  }
  V& operator[](uint64_t k) { return *TryEmplace(k).first; }

  // True when `k` was there.
  bool Erase(uint64_t k) {
    if (k == 0) {
      const bool had = has_zero_;
      has_zero_ = false;
      zero_ = V{};
      return had;
    }
    if (slots_.empty()) return false;
    size_t i = Home(k);
    for (;; i = (i + 1) & mask_) {
      if (slots_[i].key == k) break;
      if (slots_[i].key == 0) return false;
    }
    // Backward shift: pull later entries of the probe run into the hole
    // when the hole lies on their way from their home slot.
    for (size_t j = (i + 1) & mask_; slots_[j].key != 0; j = (j + 1) & mask_) {
      const size_t home = Home(slots_[j].key);
      if (((j - home) & mask_) >= ((j - i) & mask_)) {
        slots_[i].key = slots_[j].key;
        slots_[i].value = std::move(slots_[j].value);
        i = j;
      }
    }
    slots_[i].key = 0;
    slots_[i].value = V{};
    --size_;
    return true;
  }

  size_t size() const { return size_ + has_zero_; }
  bool empty() const { return size() == 0; }
  // fn(key, value) for every entry, in no meaningful order (see above).
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    if (has_zero_) fn(uint64_t{0}, zero_);
    for (const Slot& s : slots_)
      if (s.key != 0) fn(s.key, s.value);
  }

 private:
  struct Slot {
    uint64_t key = 0;  // 0: empty (0 is never a valid id, ids.h; kept aside all the same)
    V value{};
  };
  // Fibonacci hashing: consecutive ids spread over the table.
  size_t Home(uint64_t k) const { return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> shift_); }
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t cap = old.empty() ? 16 : 2 * old.size();
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    shift_ = 64;
    for (size_t c = cap; c > 1; c >>= 1) --shift_;
    for (Slot& s : old) {
      if (s.key == 0) continue;
      size_t i = Home(s.key);
      while (slots_[i].key != 0) i = (i + 1) & mask_;
      slots_[i] = std::move(s);
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  unsigned shift_ = 64;
  size_t size_ = 0;  // nonzero keys held
  bool has_zero_ = false;
  V zero_{};
};

// A set of ids (IdMap without values).
class IdSet {
 public:
  bool Insert(uint64_t k) { return m_.TryEmplace(k).second; }
  bool Erase(uint64_t k) { return m_.Erase(k); }
  bool Contains(uint64_t k) const { return m_.Contains(k); }
  size_t size() const { return m_.size(); }
  bool empty() const { return m_.empty(); }
  // fn(key) for every id, in no meaningful order (IdMap::ForEach).
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    m_.ForEach([&](uint64_t k, const None&) { fn(k); });
  }
  // The ids in ascending order.
  std::vector<uint64_t> Sorted() const {
    std::vector<uint64_t> ids;
    ids.reserve(size());
    ForEach([&](uint64_t k) { ids.push_back(k); });
    std::sort(ids.begin(), ids.end());
    return ids;
  }

 private:
  struct None {};
  IdMap<None> m_;
};

}  // namespace tailcut
