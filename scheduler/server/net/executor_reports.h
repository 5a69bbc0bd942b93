// What an executor tells the scheduler, applied to the core: its reports
// (starts, progress, results) and what it brings back when it registers
// again. Only about attempts that really run on it; what it sent that is
// out of range is ignored or replaced, and told to `bad`.
#pragma once

#include "tailcut.pb.h"
#include "tailcut/core/scheduler_core.h"
#include "wire_convert.h"

namespace tailcut {

// What a re-registering executor brought back (Register.running and
// .undelivered) handed to the core: results commit once, attempts are
// adopted or added to `cancel`. Counts for the log.
struct TakeBackCounts {
  size_t committed = 0, adopted = 0;
};
TakeBackCounts TakeBackFromWire(SchedulerCore& core, ExecutorId e, const wire::Register& r, wire::Work* cancel,
                                const BadInputFn& bad);
// A Report's news for the core, only about attempts that really run on `e`
// (others are late, cancelled or foreign); progress outside 0..1 ignored.
// A Report with more entries (starts, progress, results, promotions) than
// kReportEntriesPerAttempt per attempt ever handed to `e`, plus
// kReportEntriesSlack, is refused whole, unwalked (false): an honest one
// names each attempt at most once a kind, and walking millions of empty
// results would stall the loop for everyone (issue 43).
inline constexpr uint64_t kReportEntriesPerAttempt = 4, kReportEntriesSlack = 64;
bool ApplyReport(SchedulerCore& core, ExecutorId e, const wire::Report& r, const BadInputFn& bad);

}  // namespace tailcut
