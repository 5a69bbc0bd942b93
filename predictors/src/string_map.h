// unordered_map keyed by std::string, looked up by std::string_view without
// allocating (C++20 heterogeneous lookup).
#pragma once

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

}  // namespace tailcut
