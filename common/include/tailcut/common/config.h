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
  // it is present with the wrong type (ints are accepted for doubles; nan
  // and inf are not numbers any setting wants, so they are errors too).
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

// Reads the keys of one table, each with its default (the value already in
// *out). The first error sticks, so a loader reads its keys and checks in
// one chain and returns status() once. This is the one way tailcut reads a
// config table (daemons, policies, predictors, scenarios, job files).
//
//   TableReader t(cfg, "core");
//   t.Get("lost_after_s", &o->lost_after_s).Get("max_attempts", &o->max_attempts)
//       .Check(o->max_attempts >= 1, "max_attempts must be at least 1");
//   return t.status();
class TableReader {
 public:
  // `table`: dotted prefix such as "core" or "policies.spark" (a trailing
  // dot is fine); "" = top level.
  TableReader(const Config& cfg, std::string_view table)
      : cfg_(cfg), prefix_(table.empty() || table.back() == '.' ? std::string(table) : std::string(table) + ".") {}

  template <typename T>
  TableReader& Get(std::string_view key, T* out) {
    if (status_.ok()) status_ = cfg_.Get(Key(key), out);
    return *this;
  }
  // Unless `ok`: InvalidArgument "<table>.<what>" (what starts with the key).
  TableReader& Check(bool ok, std::string_view what) {
    if (status_.ok() && !ok) status_ = Status::InvalidArgument(prefix_ + std::string(what));
    return *this;
  }
  // Keeps the first error of a nested reader or a validation function.
  TableReader& Also(const Status& s) {
    if (status_.ok() && !s.ok()) status_ = s;
    return *this;
  }
  bool Has(std::string_view key) const { return cfg_.Has(Key(key)); }
  std::string Key(std::string_view key) const { return prefix_ + std::string(key); }
  const std::string& prefix() const { return prefix_; }  // "core." (with the dot)
  const Config& config() const { return cfg_; }
  const Status& status() const { return status_; }

 private:
  const Config& cfg_;
  std::string prefix_;
  Status status_;
};

// `s` as a TOML basic string, quotes included: for writing TOML files and
// "key=value" overrides from free text (names, labels).
std::string TomlQuote(std::string_view s);

}  // namespace tailcut
