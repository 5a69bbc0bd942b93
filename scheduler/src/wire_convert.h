// Conversions between the wire protocol and the core's types. Every number
// read from the wire is validated here (docs/LIMITS.md).
#pragma once

#include "tailcut.pb.h"
#include "tailcut/common/status.h"
#include "tailcut/scheduler/core.h"

namespace tailcut {

// Sane maxima for numbers from the wire. Slots: with at most
// scheduler.max_executors executors of kMaxWireSlots each, slot totals stay
// far below uint32. Seconds: timeouts, deadlines and run times beyond a year
// are typos or forgeries.
inline constexpr uint32_t kMaxWireSlots = 65536;
inline constexpr uint32_t kMaxWireGpus = 64;
inline constexpr double kMaxWireSeconds = 365.0 * 24 * 3600;

// Tasks a JobSpec asks for (explicit plus template copies), without
// building anything: admission is checked on this first.
uint64_t TaskCountOf(const wire::JobSpec& spec);
// InvalidArgument naming the field for a bad number (NaN, infinity,
// negative, absurd); TooLarge beyond kTaskCountCeiling tasks.
StatusOr<JobDef> JobDefFromWire(const wire::JobSpec& spec);
// An executor-reported run time the core may use: NaN, infinite, negative
// or absurd become 0 ("unknown": the core measures it itself).
double SanitizeRunSeconds(double run_s);
wire::JobState JobStateToWire(JobState s);
void JobStatusToWire(const JobStatusInfo& info, wire::JobStatus* out);
// Maps a core Status to the protocol's error codes, for a given request.
wire::Error::Code ErrorCodeFor(const Status& s, bool submitting);

}  // namespace tailcut
