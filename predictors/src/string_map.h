// unordered_map keyed by std::string, looked up by std::string_view without
// allocating (C++20 heterogeneous lookup); and a capped one for keys a peer
// chooses (task classes).
#pragma once

#include <functional>
#include <list>
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
// updated least recently (O(1): entries are kept in update order), so a
// client inventing a new task class per task costs bounded memory. A class
// keeps what it learned unless `max` other classes are updated after it.
template <typename V>
class BoundedStringMap {
 public:
  explicit BoundedStringMap(size_t max) : max_(max < 1 ? 1 : max) {}
  // The entry for `key`, made with make() when absent; counts as an update.
  template <typename Make>
  V& Update(std::string_view key, Make make) {
    auto it = m_.find(key);
    if (it != m_.end()) {
      order_.splice(order_.end(), order_, it->second.pos);
      return it->second.value;
    }
    if (m_.size() >= max_) {
      const std::string* oldest = order_.front();
      order_.pop_front();
      m_.erase(m_.find(*oldest));
    }
    it = m_.emplace(std::string(key), Entry{make(), {}}).first;
    it->second.pos = order_.insert(order_.end(), &it->first);  // map nodes do not move
    return it->second.value;
  }
  // Lookups do not count as updates.
  const V* Find(std::string_view key) const {
    auto it = m_.find(key);
    return it == m_.end() ? nullptr : &it->second.value;
  }
  size_t size() const { return m_.size(); }

 private:
  using Order = std::list<const std::string*>;  // keys, least recently updated first
  struct Entry {
    V value;
    Order::iterator pos;
  };
  size_t max_;
  Order order_;
  StringMap<Entry> m_;
};

}  // namespace tailcut
