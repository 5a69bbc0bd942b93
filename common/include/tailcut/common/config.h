// Typed access to TOML configuration with documented defaults.
//
// A Config is a TOML document flattened to dotted keys ("executor.slots",
// "policies.0.name"). Readers take each key with its default; afterwards
// Unused() names keys nobody read, so a typo is an error rather than a
// silently ignored setting. Command-line overrides ("key=value", the value
// in TOML syntax) land in the same map.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tailcut/common/status.h"

namespace tailcut {

class Config {
 public:
  using Value = std::variant<bool, int64_t, double, std::string>;

  static StatusOr<Config> LoadFile(const std::string& path);
  static StatusOr<Config> Parse(std::string_view toml_text, std::string_view origin = "<string>");

  // "a.b=3" or "name=\"x\"" or bare strings ("name=x"); later wins.
  Status Override(std::string_view assignment);

  // Each getter returns the default when the key is absent and an error when
  // it is present with the wrong type (ints are accepted for doubles).
  Status Get(std::string_view key, bool* out) const;
  Status Get(std::string_view key, int64_t* out) const;
  Status Get(std::string_view key, double* out) const;
  Status Get(std::string_view key, std::string* out) const;
  Status Get(std::string_view key, uint32_t* out) const;  // rejects negatives

  bool Has(std::string_view key) const;
  // Number of elements of array "key" (keys "key.0", "key.1", ...).
  size_t ArraySize(std::string_view key) const;
  // Direct children names of a table, e.g. Children("labels").
  std::vector<std::string> Children(std::string_view prefix) const;
  // Keys present but never read through Get/Has — report as "unknown key".
  std::vector<std::string> Unused() const;
  // Error listing unused keys, or ok.
  Status CheckAllUsed() const;
  const std::string& origin() const { return origin_; }

 private:
  const Value* Find(std::string_view key) const;
  std::map<std::string, Value, std::less<>> values_;
  mutable std::map<std::string, bool, std::less<>> used_;
  std::string origin_;
};

}  // namespace tailcut
