// unordered_map keyed by std::string, looked up by std::string_view without
// allocating (C++20 heterogeneous lookup); and a capped one for keys a peer
// chooses (task classes).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tailcut {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

// At most `max` entries: a new key in a full map first evicts the entry
// updated least recently (a scan, only then), so a client inventing a new
// task class per task costs a bounded amount of memory, and classes in use
// keep what they learned.
template <typename V>
class BoundedStringMap {
 public:
  explicit BoundedStringMap(size_t max) : max_(max < 1 ? 1 : max) {}
  // The entry for `key`, made with make() when absent; counts as an update.
  template <typename Make>
  V& Update(std::string_view key, Make make) {
    auto it = m_.find(key);
    if (it == m_.end()) {
      if (m_.size() >= max_) Evict();
      it = m_.emplace(std::string(key), Entry{make(), 0}).first;
    }
    it->second.updated = ++clock_;
    return it->second.value;
  }
  const V* Find(std::string_view key) const {
    auto it = m_.find(key);
    return it == m_.end() ? nullptr : &it->second.value;
  }
  size_t size() const { return m_.size(); }
  uint64_t evicted() const { return evicted_; }

 private:
  struct Entry {
    V value;
    uint64_t updated;
  };
  void Evict() {
    auto oldest = m_.begin();
    for (auto it = m_.begin(); it != m_.end(); ++it)
      if (it->second.updated < oldest->second.updated) oldest = it;
    m_.erase(oldest);
    ++evicted_;
  }
  size_t max_;
  uint64_t clock_ = 0, evicted_ = 0;
  StringMap<Entry> m_;
};

}  // namespace tailcut
