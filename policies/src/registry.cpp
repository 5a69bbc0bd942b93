#include "tailcut/policies/registry.h"

#include <functional>
#include <map>
#include <sstream>

#include "tailcut/plugins/plugin_api.h"
#include "tailcut/policies/clone.h"
#include "tailcut/policies/coded.h"
#include "tailcut/policies/hedge.h"
#include "tailcut/policies/late.h"
#include "tailcut/policies/payoff.h"
#include "tailcut/policies/predictive.h"
#include "tailcut/policies/quorum.h"
#include "tailcut/policies/reassign.h"
#include "tailcut/policies/spark.h"

namespace tailcut {
namespace {

using Factory = std::function<StatusOr<std::unique_ptr<MitigationPolicy>>(const Config&, const std::string& prefix)>;

// `default`: the inner chain (DefaultPolicyChain) inside the payoff
// controller (docs/POLICIES.md, "The default chain"). Reads
// [policies.payoff]; each inner policy reads its own table.
StatusOr<std::unique_ptr<MitigationPolicy>> MakeDefaultPolicy(const Config& cfg, const std::string&) {
  PolicyChain inner;
  for (const std::string& d : DefaultPolicyChain()) {
    auto sub = MakePolicyChain(d, cfg);
    if (!sub.ok()) return sub.status();
    for (auto& p : *sub) inner.push_back(std::move(p));
  }
  return MakePayoffPolicy(cfg, "policies.payoff.", std::move(inner));
}

// Name -> factory; each built-in policy (and each named chain) adds one
// line here.
const std::map<std::string, Factory>& Factories() {
  static const std::map<std::string, Factory> f = {
      {"default", MakeDefaultPolicy},       {"spark", MakeSparkPolicy}, {"late", MakeLatePolicy},
      {"clone", MakeClonePolicy},           {"hedge", MakeHedgePolicy}, {"reassign", MakeReassignPolicy},
      {"predictive", MakePredictivePolicy}, {"coded", MakeCodedPolicy}, {"gradient_code", MakeGradientCodePolicy},
      {"quorum", MakeQuorumPolicy},
  };
  return f;
}

// Policies whose only tool is a copy on idle capacity: behind another
// owner's backlog there is none, so a small owner's p99 goes from theirs
// alone to none's (two_owners.toml: spark 4.45x, late 6.4x, hedge 6.1x of
// alone; docs/benchmarks/policies.md, "Two owners"). Null for the others.
const char* SingleTenant(const std::string& name) {
  if (name == "spark" || name == "late" || name == "hedge")
    return "its copies need idle capacity, which another owner's backlog takes (a small owner's p99 went to 4-6x "
           "its p99 alone)";
  return nullptr;
}

}  // namespace

std::vector<std::string> SplitPolicyList(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto b = item.find_first_not_of(" \t");
    auto e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

std::vector<std::string> BuiltinPolicyNames() {
  std::vector<std::string> names;
  for (auto& [n, f] : Factories())
    if (n != "default") names.push_back(n);
  return names;
}

// Reasoning in docs/POLICIES.md ("The default chain").
std::vector<std::string> DefaultPolicyChain() { return {"clone", "predictive", "reassign"}; }

StatusOr<PolicyChain> MakePolicyChain(const std::string& chain, const Config& cfg) {
  PolicyChain out;
  for (const std::string& name : SplitPolicyList(chain)) {
    if (name == "none") continue;
    if (name.rfind("plugin:", 0) == 0) {  // plugin:PATH or plugin:PATH#NAME
      std::string spec = name.substr(7), pname;
      if (auto h = spec.rfind('#'); h != std::string::npos) {
        pname = spec.substr(h + 1);
        spec = spec.substr(0, h);
      }
      auto p = LoadPluginPolicy(spec, pname, cfg);
      if (!p.ok()) return p.status();
      out.push_back(std::move(p).value());
      continue;
    }
    if (name == "external") {  // every [[policies.external]] entry, in order
      size_t n = cfg.ArraySize("policies.external");
      for (size_t i = 0; i < n; ++i) {
        std::string pre = "policies.external." + std::to_string(i) + ".";
        std::string path, pname;
        if (Status s = cfg.Get(pre + "path", &path); !s.ok()) return s;
        if (Status s = cfg.Get(pre + "name", &pname); !s.ok()) return s;
        if (path.empty()) return Status::InvalidArgument(pre + "path is missing");
        auto p = LoadPluginPolicy(path, pname, cfg, pre);
        if (!p.ok()) return p.status();
        out.push_back(std::move(p).value());
      }
      continue;
    }
    if (const char* why = SingleTenant(name); why && cfg.Has("owners"))
      return Status::InvalidArgument("policy '" + name + "' is single-tenant: " + why +
                                     "; with [owners] use default (docs/POLICIES.md, \"Single-tenant policies\")");
    auto it = Factories().find(name);
    if (it == Factories().end()) {
      std::string known = "none, default, external, plugin:PATH[#NAME]";
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
