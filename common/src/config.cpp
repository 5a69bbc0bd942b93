#include "tailcut/common/config.h"

#include <cstdio>

#include <toml++/toml.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tailcut {
namespace {

void Flatten(const toml::node& node, const std::string& key, std::map<std::string, Config::Value, std::less<>>* out) {
  if (auto* t = node.as_table()) {
    for (auto&& [k, v] : *t) Flatten(v, key.empty() ? std::string(k.str()) : key + "." + std::string(k.str()), out);
  } else if (auto* a = node.as_array()) {
    for (size_t i = 0; i < a->size(); ++i) Flatten((*a)[i], key + "." + std::to_string(i), out);
  } else if (auto* s = node.as_string()) {
    (*out)[key] = s->get();
  } else if (auto* i = node.as_integer()) {
    (*out)[key] = static_cast<int64_t>(i->get());
  } else if (auto* d = node.as_floating_point()) {
    (*out)[key] = d->get();
  } else if (auto* b = node.as_boolean()) {
    (*out)[key] = b->get();
  } else {
    // Dates and times: kept as text.
    node.visit([&](auto&& v) {
      std::ostringstream s;
      s << v;
      (*out)[key] = s.str();
    });
  }
}

Status TypeError(std::string_view key, const char* want) {
  return Status::InvalidArgument("config key '" + std::string(key) + "' must be " + want);
}

}  // namespace

StatusOr<Config> Config::Parse(std::string_view text, std::string_view origin) {
  Config c;
  c.origin_ = std::string(origin);
  try {
    toml::table t = toml::parse(text, origin);
    Flatten(t, "", &c.values_);
  } catch (const toml::parse_error& e) {
    std::ostringstream s;
    s << origin << ":" << e.source().begin.line << ":" << e.source().begin.column << ": " << e.description();
    return Status::InvalidArgument(s.str());
  }
  return c;
}

StatusOr<Config> Config::LoadFile(const std::string& path) {
  // Read here rather than by toml::parse_file, whose error for a missing
  // file ("PATH:0:0: File could not be opened for reading") names no reason.
  errno = 0;
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::InvalidArgument("cannot open " + path + ": " + std::strerror(errno ? errno : ENOENT));
  std::ostringstream text;
  text << f.rdbuf();
  if (f.bad()) return Status::InvalidArgument("cannot read " + path + ": " + std::strerror(errno ? errno : EIO));
  auto c = Parse(text.str(), path);
  if (c.ok()) c->origin_ = path;
  return c;
}

Status Config::Override(std::string_view assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0)
    return Status::InvalidArgument("override '" + std::string(assignment) + "' is not key=value");
  std::string key(assignment.substr(0, eq));
  std::string value(assignment.substr(eq + 1));
  auto parsed = Parse("v = " + value, "override");
  if (!parsed.ok()) parsed = Parse("v = \"" + value + "\"", "override");  // bare word
  if (!parsed.ok()) return Status::InvalidArgument("override '" + std::string(assignment) + "': bad value");
  for (auto& [k, v] : parsed->values_) {
    std::string full = key + k.substr(1);  // "v" or "v.0"... -> key...
    values_[full] = v;
  }
  return Status::Ok();
}

const Config::Value* Config::Find(std::string_view key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return nullptr;
  used_[it->first] = true;
  return &it->second;
}

bool Config::Has(std::string_view key) const {
  if (Find(key)) return true;
  // A table or array counts as present when any child is.
  std::string prefix = std::string(key) + ".";
  auto it = values_.lower_bound(prefix);
  return it != values_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
}

Status Config::Get(std::string_view key, bool* out) const {
  const Value* v = Find(key);
  if (!v) return Status::Ok();
  if (auto* b = std::get_if<bool>(v)) { *out = *b; return Status::Ok(); }
  return TypeError(key, "true or false");
}

Status Config::Get(std::string_view key, int64_t* out) const {
  const Value* v = Find(key);
  if (!v) return Status::Ok();
  if (auto* i = std::get_if<int64_t>(v)) { *out = *i; return Status::Ok(); }
  return TypeError(key, "an integer");
}

Status Config::Get(std::string_view key, uint32_t* out) const {
  int64_t value = *out;
  Status s = Get(key, &value);
  if (!s.ok()) return s;
  if (value < 0 || value > UINT32_MAX) return TypeError(key, "a non-negative integer");
  *out = static_cast<uint32_t>(value);
  return Status::Ok();
}

Status Config::Get(std::string_view key, double* out) const {
  const Value* v = Find(key);
  if (!v) return Status::Ok();
  if (auto* d = std::get_if<double>(v)) {
    if (!std::isfinite(*d)) return TypeError(key, "a finite number");
    *out = *d;
    return Status::Ok();
  }
  if (auto* i = std::get_if<int64_t>(v)) { *out = static_cast<double>(*i); return Status::Ok(); }
  return TypeError(key, "a number");
}

Status Config::Get(std::string_view key, std::string* out) const {
  const Value* v = Find(key);
  if (!v) return Status::Ok();
  if (auto* s = std::get_if<std::string>(v)) { *out = *s; return Status::Ok(); }
  return TypeError(key, "a string");
}

size_t Config::ArraySize(std::string_view key) const {
  size_t n = 0;
  while (Has(std::string(key) + "." + std::to_string(n))) ++n;
  return n;
}

std::vector<std::string> Config::Children(std::string_view prefix) const {
  std::vector<std::string> out;
  std::string p = prefix.empty() ? "" : std::string(prefix) + ".";
  for (auto it = values_.lower_bound(p); it != values_.end() && it->first.compare(0, p.size(), p) == 0; ++it) {
    std::string rest = it->first.substr(p.size());
    std::string child = rest.substr(0, rest.find('.'));
    if (out.empty() || out.back() != child) out.push_back(child);
  }
  return out;
}

std::vector<std::string> Config::Unused() const {
  std::vector<std::string> out;
  for (auto& [k, v] : values_)
    if (!used_.count(k)) out.push_back(k);
  return out;
}

Status Config::CheckAllUsed() const {
  auto unused = Unused();
  if (unused.empty()) return Status::Ok();
  std::string msg = origin_ + ": unknown key";
  msg += unused.size() > 1 ? "s" : "";
  for (size_t i = 0; i < unused.size(); ++i) msg += (i ? ", '" : " '") + unused[i] + "'";
  return Status::InvalidArgument(msg);
}

std::string TomlQuote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned char>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace tailcut
