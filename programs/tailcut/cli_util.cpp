#include "cli_util.h"


#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <google/protobuf/util/json_util.h>

namespace tailcut::cli {

bool Args::Parse(int argc, char** argv, int first, const std::vector<std::string>& switches, Args* out,
                 std::string* error) {
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) == 0 || (a.size() == 2 && a[0] == '-' && a != "-")) {
      auto eq = a.find('=');
      if (eq != std::string::npos) {
        out->values_.emplace(a.substr(0, eq), a.substr(eq + 1));
      } else if (std::find(switches.begin(), switches.end(), a) != switches.end()) {
        out->values_.emplace(a, "");
      } else if (i + 1 < argc) {
        out->values_.emplace(a, argv[++i]);
      } else {
        *error = a + " needs a value";
        return false;
      }
    } else {
      out->positional_.push_back(a);
    }
  }
  return true;
}

std::string Args::Get(const std::string& flag, const std::string& def) const {
  auto it = values_.find(flag);
  return it == values_.end() ? def : it->second;
}

namespace {
std::string Range(double min, double max) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "[%.15g, %.15g]", min, max);
  return buf;
}
}  // namespace

double Args::Double(const std::string& flag, double def, double min, double max) const {
  if (!Has(flag)) return def;
  std::string text = Get(flag);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v < min || v > max) {
    if (error_.empty()) error_ = flag + " wants a number in " + Range(min, max) + ", got '" + text + "'";
    return def;
  }
  return v;
}

int64_t Args::Int(const std::string& flag, int64_t def, int64_t min, int64_t max) const {
  if (!Has(flag)) return def;
  std::string text = Get(flag);
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < min || v > max) {
    if (error_.empty())
      error_ = flag + " wants a whole number in " + Range(static_cast<double>(min), static_cast<double>(max)) +
               ", got '" + text + "'";
    return def;
  }
  return v;
}

std::vector<std::string> Args::GetAll(const std::string& flag) const {
  std::vector<std::string> v;
  auto [b, e] = values_.equal_range(flag);
  for (auto it = b; it != e; ++it) v.push_back(it->second);
  return v;
}

std::string ToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

}  // namespace tailcut::cli
