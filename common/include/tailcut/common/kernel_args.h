// The text argument format of the built-in kernels: whitespace-separated
// key=value pairs, e.g. "ms=50 sigma=0.3". See docs/KERNELS.md.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "tailcut/common/status.h"

namespace tailcut {

class KernelArgs {
 public:
  static StatusOr<KernelArgs> Parse(std::string_view text);
  bool Has(std::string_view key) const { return values_.count(std::string(key)) > 0; }
  // Default when absent; an error naming the argument when present but not
  // a finite number (nan, inf and overflowing values are errors) or, with
  // bounds, outside [lo, hi].
  Status GetDouble(std::string_view key, double* out) const;
  Status GetDouble(std::string_view key, double* out, double lo, double hi) const;
  Status GetInt(std::string_view key, int64_t* out) const;  // also rejects values beyond int64
  std::string GetString(std::string_view key, std::string def = "") const;

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace tailcut
