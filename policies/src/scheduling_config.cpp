#include "tailcut/policies/scheduling_config.h"

#include <algorithm>
#include <filesystem>

#include "tailcut/policies/registry.h"

namespace tailcut {
namespace {

// Table names of the plugin:PATH[#NAME] entries of a chain.
std::vector<std::string> PluginTables(const std::string& chain) {
  std::vector<std::string> out;
  for (const std::string& e : SplitPolicyList(chain)) {
    if (e.rfind("plugin:", 0) != 0) continue;
    std::string spec = e.substr(7);
    auto h = spec.rfind('#');
    out.push_back(h != std::string::npos ? spec.substr(h + 1) : std::filesystem::path(spec).stem().string());
  }
  return out;
}

}  // namespace

Status LoadSchedulingConfig(const Config& cfg, SchedulingConfig* out) {
  TableReader t(cfg, "policies");
  t.Also(LoadCoreOptions(cfg, "core", &out->core))
      .Also(LoadOwnerOptions(cfg, "owners", &out->core.owners))
      .Also(LoadPredictorOptions(cfg, "predictor", &out->predictor))
      .Get("chain", &out->chain);
  if (!t.status().ok()) return t.status();
  return ValidatePolicyTables(cfg, out->chain);
}

Status ValidatePolicyTables(const Config& cfg, const std::string& chain) {
  const std::vector<std::string> builtin = BuiltinPolicyNames();
  const std::vector<std::string> plugins = PluginTables(chain);
  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  for (const std::string& name : cfg.Children("policies")) {
    if (name == "chain" || has(plugins, name)) continue;  // read by the caller / by the chain's plugin
    if (name != "external" && name != "selector" && !has(builtin, name)) {
      std::string known;
      for (auto& n : builtin) known += (known.empty() ? "" : ", ") + n;
      return Status::InvalidArgument(
          cfg.origin() + ": [policies." + name + "]: no such policy (known: " + known +
          ", external; a plugin's table must be named by a plugin: entry of policies.chain)");
    }
    // Building it reads (and checks) every key it knows; the rest stay unused.
    auto p = MakePolicyChain(name == "selector" ? "default" : name, cfg);
    if (!p.ok()) return p.status();
  }
  return Status::Ok();
}

StatusOr<PolicyChain> MakePolicyEntry(const std::string& entry, const Config& cfg, const PolicyServices& services) {
  std::string chain = entry;
  std::replace(chain.begin(), chain.end(), '+', ',');
  if (entry.find('@') == std::string::npos) return MakePolicyChain(chain, cfg, services);
  PolicyChain out;
  for (const std::string& part : SplitPolicyList(chain)) {
    const size_t at = part.find('@');
    if (at == std::string::npos || part.rfind("plugin:", 0) == 0) {
      auto p = MakePolicyChain(part, cfg, services);
      if (!p.ok()) return p.status();
      for (auto& x : *p) out.push_back(std::move(x));
      continue;
    }
    // NAME@KEY=VALUE@...: the policy built from a copy of the config with
    // [policies.NAME] KEY = VALUE, each key one the policy reads.
    const std::string name = part.substr(0, at);
    Config own = cfg;
    std::vector<std::string> keys;
    for (size_t from = at + 1; from <= part.size();) {
      const size_t next = std::min(part.find('@', from), part.size());
      const std::string kv = part.substr(from, next - from);
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        return Status::InvalidArgument("policy entry '" + entry + "': '" + kv + "' is not KEY=VALUE");
      keys.push_back("policies." + name + "." + kv.substr(0, eq));
      if (Status s = own.Override(keys.back() + kv.substr(eq)); !s.ok()) return s;
      from = next + 1;
    }
    auto p = MakePolicyChain(name, own, services);
    if (!p.ok()) return p.status();
    const std::vector<std::string> unused = own.Unused();
    for (const std::string& k : keys)
      if (std::find(unused.begin(), unused.end(), k) != unused.end())
        return Status::InvalidArgument("policy entry '" + entry + "': " + name + " has no parameter '" +
                                       k.substr(name.size() + 10) + "'");
    for (auto& x : *p) out.push_back(std::move(x));
  }
  return out;
}

}  // namespace tailcut
