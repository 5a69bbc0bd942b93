#include "tailcut/common/kernel_args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace tailcut {

StatusOr<KernelArgs> KernelArgs::Parse(std::string_view text) {
  KernelArgs a;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n')) ++i;
    size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t' && text[i] != '\n') ++i;
    if (start == i) break;
    std::string_view pair = text.substr(start, i - start);
    auto eq = pair.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return Status::InvalidArgument("kernel argument '" + std::string(pair) + "' is not key=value");
    a.values_[std::string(pair.substr(0, eq))] = std::string(pair.substr(eq + 1));
  }
  return a;
}

Status KernelArgs::GetDouble(std::string_view key, double* out) const {
  auto it = values_.find(std::string(key));
  if (it == values_.end()) return Status::Ok();
  char* end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0' || !std::isfinite(v))  // strtod takes "nan", "inf", "1e999"
    return Status::InvalidArgument("kernel argument '" + it->first + "' must be a finite number, got '" +
                                   it->second + "'");
  *out = v;
  return Status::Ok();
}

Status KernelArgs::GetDouble(std::string_view key, double* out, double lo, double hi) const {
  if (!Has(key)) return Status::Ok();  // the caller's default is not checked
  double v = *out;
  if (Status s = GetDouble(key, &v); !s.ok()) return s;
  if (v < lo || v > hi) {
    std::ostringstream m;
    m << "kernel argument '" << key << "' must be in [" << lo << ", " << hi << "], got " << v;
    return Status::InvalidArgument(m.str());
  }
  *out = v;
  return Status::Ok();
}

Status KernelArgs::GetInt(std::string_view key, int64_t* out) const {
  auto it = values_.find(std::string(key));
  if (it == values_.end()) return Status::Ok();
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0' || errno == ERANGE)
    return Status::InvalidArgument("kernel argument '" + it->first + "' must be an integer, got '" + it->second + "'");
  *out = v;
  return Status::Ok();
}

std::string KernelArgs::GetString(std::string_view key, std::string def) const {
  auto it = values_.find(std::string(key));
  return it == values_.end() ? def : it->second;
}

}  // namespace tailcut
