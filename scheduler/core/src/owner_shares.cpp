#include "owner_shares.h"

#include <cmath>
#include <limits>
#include <set>

namespace tailcut {

Status LoadOwnerOptions(const Config& cfg, std::string_view prefix, OwnerOptions* out) {
  TableReader t(cfg, prefix);
  auto check = [&](const OwnerShareOptions& o, const std::string& what) {
    // Config refuses NaN and infinities already; these are the absurd ones.
    t.Check(o.weight > 0 && o.weight <= kMaxOwnerWeight, what + "weight must be > 0 and at most " +
                                                             std::to_string(static_cast<int64_t>(kMaxOwnerWeight)) +
                                                             " (it is a share: 2 gets twice the slots of 1)");
  };
  t.Get("default_weight", &out->defaults.weight).Get("default_max_slots", &out->defaults.max_slots);
  check(out->defaults, "default_");
  const std::string list = t.Key("owner");
  std::set<std::string> seen;
  for (size_t i = 0, n = cfg.ArraySize(list); i < n && t.status().ok(); ++i) {
    TableReader e(cfg, list + "." + std::to_string(i));
    std::string name;
    OwnerShareOptions o = out->defaults;
    e.Get("name", &name).Get("weight", &o.weight).Get("max_slots", &o.max_slots);
    e.Check(!name.empty(), "name must be set (the owner: a client key's name, or user:NAME without keys)");
    e.Check(seen.insert(name).second, "name '" + name + "' is listed twice");
    e.Check(o.weight > 0 && o.weight <= kMaxOwnerWeight,
            "weight must be > 0 and at most " + std::to_string(static_cast<int64_t>(kMaxOwnerWeight)));
    t.Also(e.status());
    if (e.status().ok()) out->owners.emplace_back(name, o);
  }
  return t.status();
}

namespace core {

Status CheckPriority(int32_t priority) {
  if (priority < -kMaxJobPriority || priority > kMaxJobPriority)
    return Status::InvalidArgument("priority " + std::to_string(priority) + " is outside -" +
                                   std::to_string(kMaxJobPriority) + ".." + std::to_string(kMaxJobPriority));
  return Status::Ok();
}

OwnerState& OwnerBook::Of(const std::string& owner) {
  auto [it, fresh] = owners_.try_emplace(owner);
  if (fresh) {
    const OwnerShareOptions& o = opt_.For(owner);
    it->second.name = owner;
    it->second.weight = o.weight;
    it->second.max_slots = o.max_slots;
  }
  return it->second;
}

void OwnerBook::MaybeForget(OwnerState& o) {
  // Performance: forgetting an owner at its every job's end made a state
  // (a map node, its name, its queue) per job: BM_CoreCycle lost ~12%.
  // A few idle owners stay; past kKeepIdle owners, an idle one goes.
  constexpr size_t kKeepIdle = 64;
  if (owners_.size() > kKeepIdle && o.jobs == 0 && o.slots == 0 && o.entries == 0) owners_.erase(o.name);
}

void OwnerBook::Push(OwnerState& o, int32_t priority, JobId job) {
  if (o.entries++ == 0) waiting_.emplace(o.name, &o);
  ++entries_;
  o.runnable[priority].push_back(job);
}

JobId OwnerBook::Pop(OwnerState& o) {
  // Empty levels stay while there are few (a level per job would be an
  // allocation per job), so skip them.
  constexpr size_t kKeepLevels = 4;
  auto level = o.runnable.begin();
  while (level->second.empty()) level = o.runnable.erase(level);
  JobId id = level->second.front();
  level->second.pop_front();
  if (level->second.empty() && o.runnable.size() > kKeepLevels) o.runnable.erase(level);
  if (--o.entries == 0) waiting_.erase(o.name);
  --entries_;
  return id;
}

OwnerState* OwnerBook::Pick(uint64_t* limit) {
  *limit = std::numeric_limits<uint64_t>::max();
  OwnerState* best = nullptr;
  auto before = [](const OwnerState& a, const OwnerState& b) {
    double sa = a.Share(), sb = b.Share();
    return sa != sb ? sa < sb : a.served < b.served;
  };
  // Performance: one owner (the common case, and every bench) is O(1) here;
  // otherwise O(owners with work) per pick, and a pick places up to a
  // quantum of tasks.
  for (auto& [name, o] : waiting_) {
    if (o->OverQuota(1)) continue;
    if (!best || before(*o, *best)) best = o;
  }
  if (!best) return nullptr;
  double next = std::numeric_limits<double>::infinity();
  for (auto& [name, o] : waiting_)
    if (o != best && !o->OverQuota(1)) next = std::min(next, o->Share());
  // At least one more slot: on a tie the rounding of next * weight may fall
  // just under its own count.
  if (std::isfinite(next))
    *limit = std::max<uint64_t>(best->slots + 1, static_cast<uint64_t>(std::floor(next * best->weight)) + 1);
  best->served = ++picks_;
  return best;
}

}  // namespace core
}  // namespace tailcut
