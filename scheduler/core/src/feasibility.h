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
// The same with d.kernel's id in CoreState::kernel_names (KernelNames::kNone
// when no executor offers it): a bit test, not a hash of the name.
bool Feasible(const ExecutorState& e, const TaskDef& d, uint32_t kernel);

// Ok if some executor in `executors` could run `d`; else says why not.
Status CheckFeasible(const std::map<ExecutorId, ExecutorState>& executors, const TaskDef& d);

// Rejects jobs that are empty or ill-formed, (unless wait_for_resources
// or no executor joined yet) jobs with a task no executor could run, and
// jobs with a task whose key=value arguments no executor offering its
// kernel takes (ExecutorDesc::kernel_args; docs/KERNELS.md).
Status ValidateJob(const std::map<ExecutorId, ExecutorState>& executors, const JobDef& def);
// The kernels' declared arguments (ExecutorDesc::kernel_args) over the
// registered executors, gathered once per kernel: Check(d) is Ok when some
// executor offering d.kernel takes d.args (or declares nothing), else the
// first declaration's error, which names what the kernel takes.
class KernelArgsIndex {
 public:
  explicit KernelArgsIndex(const std::map<ExecutorId, ExecutorState>& executors);
  Status Check(const TaskDef& d);

 private:
  struct Declarations {
    bool any = false;                                      // some executor's kernel takes anything
    std::vector<const std::vector<KernelArgSpec>*> specs;  // distinct ones
  };
  const std::map<ExecutorId, ExecutorState>& executors_;
  std::map<std::string, Declarations> kernels_;
};

// JobDef::output_dir: "" or an absolute path in normal form (no "." or "..",
// no trailing or doubled "/"), and rule all (docs/JOBS.md, "Output
// directories"). Whether it exists is the executors' to check: it lives on
// their disks.
Status ValidateOutputDir(const JobDef& def);

}  // namespace tailcut::core
