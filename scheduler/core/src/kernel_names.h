// KernelNames: the kernel names registered executors offer, each interned to
// a small id while some executor offers it, so that placement tests a bit
// of the executor's KernelBits instead of hashing the task's kernel name
// into the executor's set of strings per candidate (issue 41: with
// Placement::PickQueue, 17% of the scheduler at 10,000 executors).
//
// Only executors' names are interned, counted per executor offering them,
// and an id is freed when the last one leaves: the table is bounded by the
// kernels of the executors registered now, whatever jobs name. A job's
// kernel that no executor offers has no id (kNone: feasible nowhere).
// epoch() changes whenever some name's id may have changed (a name came or
// went), so that an id cached with its epoch (Placement::KernelOf) is
// looked up again only then.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tailcut::core {

// The interned kernels one executor offers.
class KernelBits {
 public:
  bool Has(uint32_t id) const { return id / 64 < words_.size() && (words_[id / 64] >> (id % 64) & 1); }
  void Add(uint32_t id) {
    if (id / 64 >= words_.size()) words_.resize(id / 64 + 1);
    words_[id / 64] |= uint64_t{1} << (id % 64);
  }
  // fn(id) for each id held.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (size_t w = 0; w < words_.size(); ++w)
      for (uint64_t bits = words_[w]; bits; bits &= bits - 1)
        fn(static_cast<uint32_t>(64 * w + static_cast<size_t>(__builtin_ctzll(bits))));
  }

 private:
  std::vector<uint64_t> words_;
};

class KernelNames {
 public:
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  // The id of `name`; kNone when no registered executor offers it.
  uint32_t Find(const std::string& name) const {
    auto it = ids_.find(name);
    return it == ids_.end() ? kNone : it->second;
  }
  // An executor offering `kernels` joins: `*bits` gets their ids.
  void Offer(const std::unordered_set<std::string>& kernels, KernelBits* bits);
  // The executor holding `bits` leaves.
  void Withdraw(const KernelBits& bits);
  uint64_t epoch() const { return epoch_; }
  size_t size() const { return ids_.size(); }

 private:
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<const std::string*> names_;  // by id: its key in ids_, null when free
  std::vector<uint32_t> offering_;         // by id: executors offering it
  std::vector<uint32_t> free_;             // ids to hand out again
  uint64_t epoch_ = 1;
};

}  // namespace tailcut::core
