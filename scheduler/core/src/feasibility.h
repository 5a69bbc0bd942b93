// Feasibility: whether registered executors could ever run a task (ignoring
// what they run now), why not when none can, and job validation at submit.
#pragma once

#include <map>

#include "core_state.h"

namespace tailcut::core {

// `e` has every label `d` requires, with the same value.
// Needs both label lists sorted: SortLabels on a job before it is
// validated or added, Lifecycle::AddExecutor for executors.
bool LabelsMatch(const Executor& e, const TaskDef& d);
void SortLabels(JobDef& def);

// Could `e` ever run `d` (ignoring what it runs now)?
bool Feasible(const Executor& e, const TaskDef& d);

// Ok if some executor in `executors` could run `d`; else says why not.
Status CheckFeasible(const std::map<ExecutorId, Executor>& executors, const TaskDef& d);

// Rejects jobs that are empty or ill-formed, and (unless wait_for_resources
// or no executor joined yet) jobs with a task no executor could run.
Status ValidateJob(const std::map<ExecutorId, Executor>& executors, const JobDef& def);

}  // namespace tailcut::core
