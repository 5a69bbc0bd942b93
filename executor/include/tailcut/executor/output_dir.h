// Attempt-scoped output (docs/JOBS.md, "Output directories"): each attempt
// of a job with output_dir writes into its own directory
//   <output_dir>/.tailcut-attempts/<job>.<task>.<attempt>
// and only the committed attempt's is renamed to <output_dir>/task-<task>.
// The attempt directories live under output_dir so that the rename stays
// within one file system, which makes it atomic (rename(2)).
#pragma once

#include <cstdint>
#include <string>

#include "tailcut/common/status.h"

namespace tailcut::executor {

std::string AttemptOutputDir(const std::string& output_dir, uint64_t job, uint32_t task, uint64_t attempt);
std::string PromotedOutputDir(const std::string& output_dir, uint32_t task);  // <output_dir>/task-<task>

// Creates the attempt's directory and returns its path. FailedPrecondition
// naming output_dir when that does not exist here (it must be on this
// machine's disk or a shared file system).
StatusOr<std::string> MakeAttemptOutputDir(const std::string& output_dir, uint64_t job, uint32_t task,
                                           uint64_t attempt);
// Removes an attempt's directory and what it holds; errors are logged.
void RemoveAttemptOutputDir(const std::string& path);
// Renames the attempt's directory to task-<task>, makes the rename durable
// (fsync of output_dir) and removes the task's other attempt directories.
// Idempotent: when task-<task> exists already it stays as it is (promoted
// before: a resend, or another executor on this file system did it) and
// the attempt's directory, if any, is removed. NotFound when neither
// exists (the directory is on another machine's disk, or was deleted).
Status PromoteAttemptOutput(const std::string& output_dir, uint64_t job, uint32_t task, uint64_t attempt);

}  // namespace tailcut::executor
