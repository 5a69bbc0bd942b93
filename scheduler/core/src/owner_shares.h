// Owners' shares of the fleet (docs/POLICIES.md, "Owners: priorities,
// weights, quotas"): the runnable queue, per owner and per priority, and the
// slots each owner's live attempts hold. The pump serves the owner with the
// lowest slots / weight first (weighted fair share; owners with nothing to
// place take no part, so their share goes to the busy ones), within an owner
// its highest-priority jobs first, and jobs of one priority round-robin.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "tailcut/common/ids.h"
#include "tailcut/core/types.h"

namespace tailcut::core {

struct OwnerState {
  std::string name;
  double weight = 1;
  uint32_t max_slots = 0;  // 0: no quota
  uint64_t slots = 0;      // held by its live attempts (copies and queued ones too)
  uint32_t jobs = 0;       // its running jobs
  uint64_t served = 0;     // OwnerBook's pick count when last picked (ties: longest unserved first)
  // Runnable entries (one per job with work, stale ones popped lazily), by
  // priority, highest first.
  std::map<int32_t, std::deque<JobId>, std::greater<>> runnable;
  size_t entries = 0;
  bool aside = false;  // has a job that found no slot in the pump now running (SchedulerCore::Impl::Pump)

  double Share() const { return static_cast<double>(slots) / weight; }
  // Whether `need` more slots would break its quota.
  bool OverQuota(uint64_t need) const { return max_slots > 0 && slots + need > max_slots; }
};

class OwnerBook {
 public:
  explicit OwnerBook(const OwnerOptions& options) : opt_(options) {}

  // The owner's state, made with its configured weight and quota on first use.
  OwnerState& Of(const std::string& owner);
  // Forgets `o` when it has no running job, no slot and no entry left and
  // the book holds many owners (owners come and go with their jobs, so the
  // book stays bounded).
  void MaybeForget(OwnerState& o);

  void Push(OwnerState& o, int32_t priority, JobId job);
  // Takes `o`'s next entry: its highest priority's front.
  JobId Pop(OwnerState& o);

  // The owner to serve next: the lowest Share() among owners with entries
  // and room in their quota, or null. `*limit`: the slots it may hold before
  // another such owner's share is lower (no limit when it is alone).
  OwnerState* Pick(uint64_t* limit);

  // Owners with runnable entries (any, stale ones included).
  size_t Waiting() const { return waiting_.size(); }
  size_t Entries() const { return entries_; }
  const std::map<std::string, OwnerState>& owners() const { return owners_; }

 private:
  const OwnerOptions& opt_;
  std::map<std::string, OwnerState> owners_;  // ordered: deterministic picks
  // Those with entries, in the same order: Pick looks at no other (owners
  // whose jobs all wait parked cost nothing).
  std::map<std::string_view, OwnerState*> waiting_;
  size_t entries_ = 0;
  uint64_t picks_ = 0;
};

// Refuses a priority outside [-kMaxJobPriority, kMaxJobPriority].
Status CheckPriority(int32_t priority);

}  // namespace tailcut::core
