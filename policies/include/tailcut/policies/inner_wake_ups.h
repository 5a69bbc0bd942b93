// The wake-ups a wrapping policy's inner policies asked for (PayoffPolicy,
// SelectorPolicy): each comes back, once, to the inner policy that asked.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tailcut/core/policy.h"

namespace tailcut {

class InnerWakeUps {
 public:
  void Add(AttemptId a, Time at, uint32_t inner) { m_[a].push_back({at, inner}); }
  void Forget(AttemptId a) { m_.erase(a); }
  // The inner policies (by index) whose wake-up for `a` is due at `now`,
  // each once and in index order; they are dropped.
  std::vector<uint32_t> TakeDue(AttemptId a, Time now) {
    std::vector<uint32_t> due;
    auto it = m_.find(a);
    if (it == m_.end()) return due;
    auto& w = it->second;
    for (auto x = w.begin(); x != w.end();) {
      if (x->first <= now) {
        if (std::find(due.begin(), due.end(), x->second) == due.end()) due.push_back(x->second);
        x = w.erase(x);
      } else {
        ++x;
      }
    }
    if (w.empty()) m_.erase(it);
    std::sort(due.begin(), due.end());
    return due;
  }

 private:
  std::unordered_map<AttemptId, std::vector<std::pair<Time, uint32_t>>> m_;
};

}  // namespace tailcut
