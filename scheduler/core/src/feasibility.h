// Feasibility: whether registered executors could ever run a task (ignoring
// what they run now), why not when none can, and job validation at submit.
#pragma once

#include <map>

#include "core_state.h"

namespace tailcut::core {

// `e` has every label `d` requires, with the same value.
// Needs both label lists sorted: SortLabels on a job before it is
// validated or added, Lifecycle::AddExecutor for executors.
bool LabelsMatch(const ExecutorState& e, const TaskDef& d);
void SortLabels(JobDef& def);

// Could `e` ever run `d` (ignoring what it runs now)?
bool Feasible(const ExecutorState& e, const TaskDef& d);

// Ok if some executor in `executors` could run `d`; else says why not.
Status CheckFeasible(const std::map<ExecutorId, ExecutorState>& executors, const TaskDef& d);

// Rejects jobs that are empty or ill-formed, and (unless wait_for_resources
// or no executor joined yet) jobs with a task no executor could run.
Status ValidateJob(const std::map<ExecutorId, ExecutorState>& executors, const JobDef& def);
// JobDef::output_dir: "" or an absolute path in normal form (no "." or "..",
// no trailing or doubled "/"), and rule all (docs/JOBS.md, "Output
// directories"). Whether it exists is the executors' to check: it lives on
// their disks.
Status ValidateOutputDir(const JobDef& def);

}  // namespace tailcut::core
