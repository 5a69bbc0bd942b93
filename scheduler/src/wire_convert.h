// Conversions between the wire protocol and the core's types.
#pragma once

#include "tailcut.pb.h"
#include "tailcut/common/status.h"
#include "tailcut/scheduler/core.h"

namespace tailcut {

// The most tasks one job may hold (keeps a typo from exhausting memory).
inline constexpr uint64_t kMaxTasksPerJob = 50'000'000;

StatusOr<JobDef> JobDefFromWire(const wire::JobSpec& spec);
// A Register's executor, as the core takes it; an unnamed one is called
// "executor-<ordinal>".
ExecutorDesc ExecutorDescFromWire(const wire::Register& r, size_t ordinal);
// What a re-registering executor brought back (Register.running and
// .undelivered) handed to the core: results commit once, attempts are
// adopted or added to `cancel`. Counts for the log.
struct TakeBackCounts {
  size_t committed = 0, adopted = 0;
};
TakeBackCounts TakeBackFromWire(SchedulerCore& core, ExecutorId e, const wire::Register& r, wire::Work* cancel);
// A Report's news for the core, only about attempts that really run on `e`
// (others are late, cancelled or foreign).
void ApplyReport(SchedulerCore& core, ExecutorId e, const wire::Report& r);
wire::JobState JobStateToWire(JobState s);
void JobStatusToWire(const JobStatusInfo& info, wire::JobStatus* out);
// Maps a core Status to the protocol's error codes, for a given request.
wire::Error::Code ErrorCodeFor(const Status& s, bool submitting);

}  // namespace tailcut
