// The wake-ups a wrapping policy's inner policies asked for (PayoffPolicy,
// SelectorPolicy): each comes back, once, to the inner policy that asked.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "tailcut/common/id_map.h"
#include "tailcut/core/policy.h"

namespace tailcut {

class InnerWakeUps {
 public:
  void Add(AttemptId a, Time at, uint32_t inner) {
    Pending& p = m_[a];
    if (!p.has_first) {
      p.first = {at, inner};
      p.has_first = true;
    } else {
      p.more.push_back({at, inner});
    }
  }
  void Forget(AttemptId a) { m_.Erase(a); }
  // The inner policies (by index) whose wake-up for `a` is due at `now`,
  // each once and in index order; they are dropped.
  std::vector<uint32_t> TakeDue(AttemptId a, Time now) {
    std::vector<uint32_t> due;
    Pending* found = m_.Find(a);
    if (!found) return due;
    Pending& p = *found;
    auto take = [&](const Entry& x) {
      if (std::find(due.begin(), due.end(), x.second) == due.end()) due.push_back(x.second);
    };
    if (p.has_first && p.first.first <= now) {
      take(p.first);
      p.has_first = false;
    }
    for (auto x = p.more.begin(); x != p.more.end();) {
      if (x->first <= now) {
        take(*x);
        x = p.more.erase(x);
      } else {
        ++x;
      }
    }
    if (!p.has_first && !p.more.empty()) {  // the first slot stays the one in use
      p.first = p.more.front();
      p.has_first = true;
      p.more.erase(p.more.begin());
    }
    if (!p.has_first) m_.Erase(a);
    std::sort(due.begin(), due.end());
    return due;
  }

 private:
  using Entry = std::pair<Time, uint32_t>;
  // Performance: most attempts have one pending wake-up; it is kept in the
  // node, not in a vector of its own (an allocation per launch less under
  // `default`, issue 41), and the nodes are slots of one flat table (IdMap).
  struct Pending {
    Entry first{};
    bool has_first = false;
    std::vector<Entry> more;  // further ones, rare
  };
  IdMap<Pending> m_;
};

}  // namespace tailcut
