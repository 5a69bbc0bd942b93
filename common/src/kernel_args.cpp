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

std::vector<std::string> KernelArgs::Keys() const {
  std::vector<std::string> keys;
  for (const auto& [k, v] : values_) keys.push_back(k);
  return keys;
}

std::string DescribeKernelArgs(const std::vector<KernelArgSpec>& specs) {
  std::ostringstream o;
  for (const KernelArgSpec& a : specs) {
    if (o.tellp() > 0) o << ", ";
    o << a.name << " (" << (a.type == KernelArgSpec::Type::kInteger ? "integer" : "number");
    const bool lo = a.min > -1.7976931348623157e308, hi = a.max < 1.7976931348623157e308;
    if (lo && hi)
      o << " in [" << a.min << ", " << a.max << "]";
    else if (lo)
      o << " >= " << a.min;
    else if (hi)
      o << " <= " << a.max;
    o << ")";
  }
  return specs.empty() ? "none" : o.str();
}

Status CheckKernelArgs(std::string_view kernel, std::string_view args, const std::vector<KernelArgSpec>& specs) {
  const std::string who = "kernel '" + std::string(kernel) + "'";
  const std::string takes = specs.empty() ? "it takes no arguments" : "it takes " + DescribeKernelArgs(specs);
  auto parsed = KernelArgs::Parse(args);
  if (!parsed.ok()) return Status::InvalidArgument(parsed.status().message() + " (" + takes + ")");
  for (const std::string& key : parsed->Keys()) {
    const KernelArgSpec* spec = nullptr;
    for (const KernelArgSpec& a : specs)
      if (a.name == key) spec = &a;
    if (!spec) return Status::InvalidArgument(who + " has no argument '" + key + "' (" + takes + ")");
    if (HasTaskArgsTemplate(parsed->GetString(key))) continue;
    Status s;
    if (spec->type == KernelArgSpec::Type::kInteger) {
      int64_t v = 0;
      s = parsed->GetInt(key, &v);
      if (s.ok() && (static_cast<double>(v) < spec->min || static_cast<double>(v) > spec->max))
        s = Status::InvalidArgument("kernel argument '" + key + "' must be in [" + std::to_string(spec->min) + ", " +
                                    std::to_string(spec->max) + "], got " + std::to_string(v));
    } else {
      double v = 0;
      s = parsed->GetDouble(key, &v, spec->min, spec->max);
    }
    if (!s.ok()) return Status::InvalidArgument(who + ": " + s.message() + " (" + takes + ")");
  }
  return Status::Ok();
}

StatusOr<ExecArgs> ParseExecArgs(std::string_view text) {
  ExecArgs a;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    auto where = [&] { return "exec args line " + std::to_string(line_no) + ": "; };
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) return Status::InvalidArgument(where() + "'" + std::string(line) + "' is not KEY=VALUE");
    std::string_view key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "arg") {
      a.argv.emplace_back(value);
    } else if (key == "env") {
      size_t e = value.find('=');
      if (e == std::string_view::npos || e == 0)
        return Status::InvalidArgument(where() + "env wants NAME=VALUE, got '" + std::string(value) + "'");
      a.env.emplace_back(std::string(value.substr(0, e)), std::string(value.substr(e + 1)));
    } else if (key == "cwd") {
      a.cwd = std::string(value);
    } else if (key == "cpu_s" || key == "memory_mb") {
      auto one = KernelArgs::Parse(std::string(key) + "=" + std::string(value));
      if (!one.ok()) return Status::InvalidArgument(where() + one.status().message());
      if (key == "cpu_s") {
        if (Status s = one->GetDouble("cpu_s", &a.cpu_s, 0, 365 * 24 * 3600.0); !s.ok())
          return Status::InvalidArgument(where() + s.message());
      } else {
        int64_t mb = 0;
        if (Status s = one->GetInt("memory_mb", &mb); !s.ok()) return Status::InvalidArgument(where() + s.message());
        if (mb < 0 || mb > (int64_t{1} << 40)) return Status::InvalidArgument(where() + "memory_mb must be in [0, 2^40]");
        a.memory_mb = static_cast<uint64_t>(mb);
      }
    } else {
      return Status::InvalidArgument(where() + "unknown key '" + std::string(key) +
                                     "' (arg, env, cwd, cpu_s, memory_mb)");
    }
  }
  if (a.argv.empty()) return Status::InvalidArgument("exec args: no arg= line (the program to run)");
  return a;
}

StatusOr<std::string> FormatExecArgs(const ExecArgs& a) {
  std::ostringstream o;
  auto line = [&](std::string_view key, const std::string& value) {
    if (value.find('\n') != std::string::npos)
      return Status::InvalidArgument("exec args: " + std::string(key) + " value holds a line break");
    o << key << '=' << value << '\n';
    return Status::Ok();
  };
  for (const std::string& v : a.argv)
    if (Status s = line("arg", v); !s.ok()) return s;
  for (const auto& [k, v] : a.env)
    if (Status s = line("env", k + "=" + v); !s.ok()) return s;
  if (!a.cwd.empty())
    if (Status s = line("cwd", a.cwd); !s.ok()) return s;
  if (a.cpu_s > 0) o << "cpu_s=" << a.cpu_s << '\n';
  if (a.memory_mb > 0) o << "memory_mb=" << a.memory_mb << '\n';
  return o.str();
}

std::string ExpandTaskArgs(std::string_view args, uint64_t index, uint64_t count) {
  static constexpr std::string_view kIndex = "{index}", kCount = "{count}";
  std::string out;
  out.reserve(args.size() + 16);
  for (size_t i = 0; i < args.size();) {
    if (args.substr(i, kIndex.size()) == kIndex) {
      out += std::to_string(index);
      i += kIndex.size();
    } else if (args.substr(i, kCount.size()) == kCount) {
      out += std::to_string(count);
      i += kCount.size();
    } else {
      out += args[i++];
    }
  }
  return out;
}

bool HasTaskArgsTemplate(std::string_view args) {
  return args.find("{index}") != std::string_view::npos || args.find("{count}") != std::string_view::npos;
}

}  // namespace tailcut
