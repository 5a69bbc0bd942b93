// What a client submits, in the core's own terms (the daemon converts from
// the wire format; the simulator builds these directly).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tailcut/common/ids.h"

namespace tailcut {

// A task's part of a divisible job's work (JobDef::divisible_units): units
// [begin, begin + count) of `total`. total == 0: the job is not divisible.
struct WorkShare {
  uint64_t begin = 0;
  uint64_t count = 0;
  uint64_t total = 0;
  bool divisible() const { return total > 0; }
};

// An upstream task's committed output taken as input (TaskDef::inputs):
// task `task` of job `job`, or every task of it (`all`).
struct TaskRef {
  JobId job = 0;
  TaskIndex task = 0;
  bool all = false;
};

struct TaskDef {
  std::string kernel;
  std::string args;                 // opaque bytes for the kernel
  uint32_t cpu_slots = 1;
  uint32_t gpus = 0;       // whole devices, each attempt its own (docs/GPU.md)
  uint64_t memory_mb = 0;  // held while it runs; 0 = no request (docs/JOBS.md, "Memory")
  std::vector<std::pair<std::string, std::string>> labels;  // required
  std::string task_class;           // empty: the kernel name
  double input_size = 0;
  double timeout_s = 0;             // per attempt, from its start; 0 = the scheduler's default
  WorkShare share;                  // fixed by the submitter (TaskSpec.share); total 0 = none
  // Running it twice is harmless (TaskSpec.idempotent); unset: the job's
  // JobDef::idempotent, else the kernel's default (ExecutorDesc).
  std::optional<bool> idempotent;
  bool args_template = false;       // the executor expands {index} and {count} in args
  // Upstream outputs handed to each attempt (docs/JOBS.md, "Task inputs");
  // their jobs are in JobDef::after.
  std::vector<TaskRef> inputs;
  const std::string& ClassName() const { return task_class.empty() ? kernel : task_class; }
};

enum class CompletionKind { kAll, kKOfN, kQuorum };

struct CompletionRule {
  CompletionKind kind = CompletionKind::kAll;
  uint32_t k = 0;            // kKOfN, kQuorum: commits that end the job
  uint32_t min_count = 0;    // kQuorum: fewest commits that still succeed
  double deadline_s = 0;     // kQuorum: after submission; 0 = none
};

struct JobDef {
  std::string name;
  std::vector<TaskDef> tasks;       // explicit tasks, index = position
  TaskDef templ;                    // then `template_count` copies of this
  uint32_t template_count = 0;
  CompletionRule rule;
  uint32_t max_attempts = 0;        // failed attempts per task; 0 = default
  bool wait_for_resources = false;  // else infeasible tasks fail the job
  bool stream_results = false;      // emit TaskCommitted commands
  bool return_outputs = false;      // keep outputs for JobOutputs()
  std::string request_key;          // the client's idempotency key, if any
  std::string owner;                // who may read, watch and cancel it (set by the server)
  double timeout_s = 0;             // whole job, from submission; 0 = the scheduler's default
  // > 0: the tasks share out this many units of work, sized by the speed of
  // the executors they are placed on (docs/JOBS.md, "Speed-proportional
  // work"); every attempt is told its WorkShare. Needs rule kAll.
  uint64_t divisible_units = 0;
  // The tasks' default for TaskDef::idempotent; unset: each kernel's own.
  // Only idempotent tasks get copies, clones, hedges or a restart of a
  // launched attempt (the proposal gate enforces it).
  std::optional<bool> idempotent;
  // Attempt-scoped output (docs/JOBS.md, "Output directories"): an absolute
  // directory; the committed attempt's private directory is promoted to
  // <output_dir>/task-<index> (PromoteCmd) and the job succeeds once every
  // task's is. Needs rule kAll. "" = none.
  std::string output_dir;
  // Jobs this one runs after (docs/JOBS.md, "Dependencies"): it waits until
  // each has succeeded and ends when one fails or is cancelled.
  std::vector<JobId> after;
  // Orders this owner's own jobs: higher first, in [-kMaxJobPriority,
  // kMaxJobPriority] (types.h). Across owners the weighted fair share
  // decides, so anyone may use any priority (docs/POLICIES.md, "Owners").
  int32_t priority = 0;

  uint32_t TaskCount() const { return static_cast<uint32_t>(tasks.size()) + template_count; }
  const TaskDef& Task(TaskIndex i) const { return i < tasks.size() ? tasks[i] : templ; }
};

enum class JobState { kRunning, kSucceeded, kFailed, kCancelled };
const char* JobStateName(JobState s);

}  // namespace tailcut
