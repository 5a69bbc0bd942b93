// Read-only questions about the core's state that SchedulerCore answers
// (scheduler_core.h, "queries"), and its admission check.
#pragma once

#include <string>
#include <vector>

#include "core_state.h"

namespace tailcut::core {

// SchedulerCore::CheckAdmission: TooLarge over core.max_tasks_per_job (or
// max_queued_tasks), ResourceExhausted while unfinished jobs hold too many.
Status CheckAdmission(const CoreState& s, uint64_t tasks);
StatusOr<JobStatusInfo> JobStatusOf(const CoreState& s, JobId id);
StatusOr<std::vector<CommittedOutput>> JobOutputsOf(const CoreState& s, JobId id);
// The task an attempt runs; null once the job is evicted.
const TaskDef* TaskOf(const CoreState& s, JobId j, TaskIndex t);
// At most `limit` executors with an id above `after`, by id.
std::vector<ExecutorStatusInfo> ExecutorList(const CoreState& s, ExecutorId after, size_t limit);
// Tasks of running jobs waiting for a slot (SchedulerCore::WaitingTasks).
uint64_t WaitingTasks(const CoreState& s);
// "NAME: HOOK threw: WHAT" per disabled policy, in chain order.
std::vector<std::string> DisabledPolicies(const CoreState& s);

}  // namespace tailcut::core
