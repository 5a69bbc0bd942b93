#include "tailcut/plugins/registry.h"

#include <functional>
#include <map>
#include <sstream>

namespace tailcut {
namespace {

using Factory = std::function<StatusOr<std::unique_ptr<MitigationPolicy>>(const Config&, const std::string& prefix)>;

// Name -> factory; each built-in policy adds one line here.
const std::map<std::string, Factory>& Factories() {
  static const std::map<std::string, Factory> f = {};
  return f;
}

std::vector<std::string> Split(const std::string& chain) {
  std::vector<std::string> out;
  std::stringstream ss(chain);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto b = item.find_first_not_of(" \t");
    auto e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

}  // namespace

std::vector<std::string> BuiltinPolicyNames() {
  std::vector<std::string> names;
  for (auto& [n, f] : Factories()) names.push_back(n);
  return names;
}

std::vector<std::string> DefaultPolicyChain() { return {}; }

StatusOr<PolicyChain> MakePolicyChain(const std::string& chain, const Config& cfg) {
  PolicyChain out;
  for (const std::string& name : Split(chain)) {
    if (name == "none") continue;
    if (name == "default") {
      for (const std::string& d : DefaultPolicyChain()) {
        auto sub = MakePolicyChain(d, cfg);
        if (!sub.ok()) return sub.status();
        for (auto& p : *sub) out.push_back(std::move(p));
      }
      continue;
    }
    auto it = Factories().find(name);
    if (it == Factories().end()) {
      std::string known = "none, default";
      for (auto& n : BuiltinPolicyNames()) known += ", " + n;
      return Status::InvalidArgument("unknown policy '" + name + "' (known: " + known + ")");
    }
    auto p = it->second(cfg, "policies." + name + ".");
    if (!p.ok()) return p.status();
    out.push_back(std::move(p).value());
  }
  return out;
}

}  // namespace tailcut
