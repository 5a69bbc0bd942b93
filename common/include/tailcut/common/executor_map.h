// Per-executor records by id, dense: the core hands out executor ids from 1
// upwards, so a vector indexed by id replaces a hash lookup on the hot path
// (every ended attempt, every judgement, every placement asks). Ids beyond
// kDenseIds (a long-lived scheduler with executor churn) fall back to a hash
// map, so memory stays bounded by the executors seen, not by the largest id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tailcut/common/ids.h"

namespace tailcut {

template <typename T>
class ExecutorMap {
 public:
  static constexpr ExecutorId kDenseIds = 1 << 16;

  T* Find(ExecutorId e) {
    if (e < kDenseIds) return e < present_.size() && present_[e] ? &dense_[e] : nullptr;
    auto it = sparse_.find(e);
    return it == sparse_.end() ? nullptr : &it->second;
  }
  const T* Find(ExecutorId e) const { return const_cast<ExecutorMap*>(this)->Find(e); }
  // The record of `e`, default-constructed when new.
  T& operator[](ExecutorId e) {
    if (e >= kDenseIds) return sparse_[e];
    if (e >= present_.size()) {
      dense_.resize(e + 1);
      present_.resize(e + 1, 0);
    }
    if (!present_[e]) {
      present_[e] = 1;
      ++dense_count_;
    }
    return dense_[e];
  }
  void Erase(ExecutorId e) {
    if (e >= kDenseIds) {
      sparse_.erase(e);
      return;
    }
    if (e < present_.size() && present_[e]) {
      present_[e] = 0;
      dense_[e] = T{};
      --dense_count_;
    }
  }
  std::size_t size() const { return dense_count_ + sparse_.size(); }
  bool empty() const { return size() == 0; }
  // fn(ExecutorId, T&) for every record, dense ids in order first.
  template <typename Fn>
  void ForEach(Fn&& fn) {
    for (ExecutorId e = 0; e < present_.size(); ++e)
      if (present_[e]) fn(e, dense_[e]);
    for (auto& [e, t] : sparse_) fn(e, t);
  }

 private:
  std::vector<T> dense_;
  std::vector<uint8_t> present_;
  std::size_t dense_count_ = 0;
  std::unordered_map<ExecutorId, T> sparse_;
};

}  // namespace tailcut
