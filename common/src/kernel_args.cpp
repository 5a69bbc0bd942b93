#include "tailcut/common/kernel_args.h"

#include <cstdlib>

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
  if (it->second.empty() || *end != '\0')
    return Status::InvalidArgument("kernel argument '" + it->first + "' must be a number, got '" + it->second + "'");
  *out = v;
  return Status::Ok();
}

Status KernelArgs::GetInt(std::string_view key, int64_t* out) const {
  auto it = values_.find(std::string(key));
  if (it == values_.end()) return Status::Ok();
  char* end = nullptr;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0')
    return Status::InvalidArgument("kernel argument '" + it->first + "' must be an integer, got '" + it->second + "'");
  *out = v;
  return Status::Ok();
}

std::string KernelArgs::GetString(std::string_view key, std::string def) const {
  auto it = values_.find(std::string(key));
  return it == values_.end() ? def : it->second;
}

}  // namespace tailcut
