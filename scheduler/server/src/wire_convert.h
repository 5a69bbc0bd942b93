// Conversions between the wire protocol and the core's types. Every number
// read from the wire is validated here (docs/LIMITS.md).
#pragma once

#include <functional>
#include <string>

#include "tailcut.pb.h"
#include "tailcut/common/status.h"
#include "tailcut/core/scheduler_core.h"
#include "tailcut/predictors/trace.h"

namespace tailcut {

// Sane maxima for numbers from the wire. Slots: with at most
// scheduler.max_executors executors of kMaxWireSlots each, slot totals stay
// far below uint32. Seconds: timeouts, deadlines and run times beyond a year
// are typos or forgeries.
inline constexpr uint32_t kMaxWireSlots = 65536;
inline constexpr uint32_t kMaxWireGpus = 64;
inline constexpr double kMaxWireSeconds = 365.0 * 24 * 3600;
// Kernel and task class names: kept per class by the predictors and per row
// by the in-memory trace, so their size is the peer's to bound, not ours.
inline constexpr size_t kMaxWireNameBytes = 256;

// InvalidArgument naming the field for a kernel or task class name over
// kMaxWireNameBytes. Checked on submit only: a job journaled before the cap
// still recovers.
Status CheckNames(const wire::JobSpec& spec);
// Tasks a JobSpec asks for (explicit plus template copies), without
// building anything: admission is checked on this first.
uint64_t TaskCountOf(const wire::JobSpec& spec);
// The same count read from a ClientRequest frame's bytes before it is
// parsed: explicit TaskSpecs are counted from their field headers (skipped,
// not built) plus template_count; 0 for a request that is no submit. An
// 18M-task frame of empty TaskSpecs is 36 MB on the wire but ~1 GB parsed,
// so admission is checked on this first. Ill-formed bytes stop the count
// (the parse that follows refuses them).
// `request_id`, when not null, gets the request's id (to answer a refusal).
uint64_t SubmitTaskCountOfFrame(const void* data, size_t size, uint64_t* request_id = nullptr);
// A message's bytes in protobuf's deterministic form (map entries sorted):
// the same content always gives the same bytes, so a request key's digest
// of a job body holds across retries and restarts.
std::string DeterministicBytes(const google::protobuf::MessageLite& msg);
// InvalidArgument naming the field for a bad number (NaN, infinity,
// negative, absurd); TooLarge beyond kTaskCountCeiling tasks.
StatusOr<JobDef> JobDefFromWire(const wire::JobSpec& spec);
// An executor-reported run time the core may use: NaN, infinite, negative
// or absurd become 0 ("unknown": the core measures it itself).
double SanitizeRunSeconds(double run_s);
// Told what an executor sent that was capped or ignored (the server logs it).
using BadInputFn = std::function<void(const std::string& what)>;
// A Register's executor, as the core takes it (slots, queue and GPUs
// capped); an unnamed one is called "executor-<ordinal>".
ExecutorDesc ExecutorDescFromWire(const wire::Register& r, size_t ordinal);
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
void ApplyReport(SchedulerCore& core, ExecutorId e, const wire::Report& r, const BadInputFn& bad);
// A journaled JobSpec (its serialized bytes) back into the core's terms,
// for recovery.
StatusOr<JobDef> JobDefFromJournal(const std::string& bytes);
// The core's view of things, for replies and pushes.
wire::JobState JobStateToWire(JobState s);
wire::ExecutorHealth::State HealthToWire(NodeHealth h);
// An executor for ListExecutors; `now` turns last_seen into seconds ago.
void ExecutorStatusToWire(const ExecutorStatusInfo& e, Time now, wire::ExecutorInfo* out);
void CommittedOutputToWire(const CommittedOutput& o, wire::TaskResult* out);
// A commit pushed to the job's watchers; the output is moved out.
void TaskCommittedToWire(TaskCommittedCmd&& c, wire::TaskResult* out);
void TraceRowToWire(const TraceRow& r, wire::TraceAttempt* out);
// A launch as the executor gets it: the task, its demand, its share of a
// divisible job (the scheduler's, or one the submitter fixed), its
// resolved inputs and the job's output_dir. Needs l.spec, which it moves out.
void LaunchToWire(LaunchCmd&& l, wire::Assignment* out);
void JobStatusToWire(const JobStatusInfo& info, wire::JobStatus* out);
// Maps a core Status to the protocol's error codes, for a given request.
wire::Error::Code ErrorCodeFor(const Status& s, bool submitting);

}  // namespace tailcut
