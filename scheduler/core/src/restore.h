// Recovery on the core's state: the live driver replays its journal into a
// fresh core (SchedulerCore::ReserveIds, RestoreJob, RestoreFinishedJob),
// and the rule for which attempts ran a divisible job's current shares.
#pragma once

#include <vector>

#include "core_state.h"
#include "lifecycle.h"

namespace tailcut::core {

// Ids below these are never handed out (an earlier run used them);
// [earlier_from, next_attempt) were an earlier run's (SchedulerCore::ReserveIds).
void ReserveIds(CoreState& s, JobId next_job, AttemptId next_attempt, AttemptId earlier_from);
// The first attempt id that ran a divisible job's current shares: the
// run that fixed them, which is this one unless they came back from the
// journal. Older attempts ran shares a crash lost, or that this run may
// size differently: their results cannot be trusted to fit.
AttemptId SharesSince(const CoreState& s, JobId id);
// A divisible job's shares for the journal (SchedulerCore::FixedShares).
bool FixedShares(const CoreState& s, JobId id, std::vector<uint64_t>* counts, AttemptId* since);
// Whether attempt `a` of divisible `job` ran a share from before SharesSince.
bool UnknownShare(const CoreState& s, const Job& job, AttemptId a);
// SchedulerCore::RestoreJob and RestoreFinishedJob (scheduler_core.h).
Status RestoreJob(CoreState& s, Lifecycle& life, JobId id, JobDef def, Time submitted,
                  std::vector<CommittedOutput> commits, const std::vector<uint64_t>& share_counts,
                  AttemptId shares_since);
Status RestoreFinishedJob(CoreState& s, Lifecycle& life, JobId id, JobDef def, const JobStatusInfo& st,
                          std::vector<CommittedOutput> outputs);

}  // namespace tailcut::core
