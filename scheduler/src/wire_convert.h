// Conversions between the wire protocol and the core's types.
#pragma once

#include "tailcut.pb.h"
#include "tailcut/common/status.h"
#include "tailcut/scheduler/core.h"

namespace tailcut {

// The most tasks one job may hold (keeps a typo from exhausting memory).
inline constexpr uint64_t kMaxTasksPerJob = 50'000'000;

StatusOr<JobDef> JobDefFromWire(const wire::JobSpec& spec);
wire::JobState JobStateToWire(JobState s);
void JobStatusToWire(const JobStatusInfo& info, wire::JobStatus* out);
// Maps a core Status to the protocol's error codes, for a given request.
wire::Error::Code ErrorCodeFor(const Status& s, bool submitting);

}  // namespace tailcut
