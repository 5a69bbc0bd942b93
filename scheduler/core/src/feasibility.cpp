#include "feasibility.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

namespace tailcut::core {

// Both lists are sorted (SortLabels, Lifecycle::AddExecutor): one merge,
// linear in their lengths (20,000 required labels were quadratic).
bool LabelsMatch(const ExecutorState& e, const TaskDef& d) {
  return std::includes(e.desc.labels.begin(), e.desc.labels.end(), d.labels.begin(), d.labels.end());
}

void SortLabels(JobDef& def) {
  for (TaskDef& d : def.tasks) std::sort(d.labels.begin(), d.labels.end());
  std::sort(def.templ.labels.begin(), def.templ.labels.end());
}

namespace {
bool ShapeFits(const ExecutorState& e, const TaskDef& d) {
  return std::max<uint32_t>(d.cpu_slots, 1) <= e.desc.slots && d.gpus <= e.desc.gpus &&
         (e.desc.memory_mb == 0 || d.memory_mb <= e.desc.memory_mb);
}
}  // namespace

bool Feasible(const ExecutorState& e, const TaskDef& d) {
  return ShapeFits(e, d) && e.kernels.count(d.kernel) > 0 && LabelsMatch(e, d);
}

bool Feasible(const ExecutorState& e, const TaskDef& d, uint32_t kernel) {
  return ShapeFits(e, d) && e.kernel_bits.Has(kernel) && LabelsMatch(e, d);
}

Status CheckFeasible(const std::map<ExecutorId, ExecutorState>& executors, const TaskDef& d) {
  if (executors.empty()) return Status::FailedPrecondition("no executor has registered with the scheduler");
  bool kernel_offered = false;
  for (auto& [id, e] : executors) {
    if (Feasible(e, d)) return Status::Ok();
    kernel_offered |= e.kernels.count(d.kernel) > 0;
  }
  if (!kernel_offered) {
    // shell, exec and python are opt-in on each executor: say how to opt in, not what else runs.
    if (d.kernel == "shell" || d.kernel == "exec" || d.kernel == "python")
      return Status::NotFound("no executor runs kernel '" + d.kernel + "' (executors offer it only when started with --allow-" +
                              d.kernel + ")");
    std::set<std::string> offered;
    for (auto& [id, e] : executors) offered.insert(e.kernels.begin(), e.kernels.end());
    std::string list;
    for (auto& k : offered) list += (list.empty() ? "" : ", ") + k;
    return Status::NotFound("no executor offers kernel '" + d.kernel + "' (offered: " + (list.empty() ? "none" : list) +
                            ")");
  }
  std::string need = std::to_string(std::max<uint32_t>(d.cpu_slots, 1)) + " cpu slot(s), " +
                     std::to_string(d.gpus) + " gpu(s)";
  if (d.memory_mb > 0) {
    uint64_t most = 0;
    for (auto& [id, e] : executors) most = std::max(most, e.desc.memory_mb);
    need += ", " + std::to_string(d.memory_mb) + " MB of memory (the most any executor has: " + std::to_string(most) +
            " MB)";
  }
  for (auto& [k, v] : d.labels) need += ", label " + k + "=" + v;
  return Status::FailedPrecondition("no executor can run a '" + d.kernel + "' task needing " + need + " (" +
                                    std::to_string(executors.size()) + " executors registered)");
}

Status ValidateOutputDir(const JobDef& def) {
  const std::string& dir = def.output_dir;
  if (dir.empty()) return Status::Ok();
  const std::string what = "output_dir '" + dir + "'";
  if (dir.find('\0') != std::string::npos) return Status::InvalidArgument("output_dir holds a NUL byte");
  if (dir.front() != '/') return Status::InvalidArgument(what + " must be an absolute path");
  // One spelling per directory, so that the executors' renames and a
  // client's reading agree on where task-<i> is.
  std::string normal = std::filesystem::path(dir).lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  if (normal != dir) return Status::InvalidArgument(what + " is not in normal form; write '" + normal + "'");
  if (dir == "/") return Status::InvalidArgument("output_dir must not be '/'");
  if (dir.size() > 3072) return Status::InvalidArgument("output_dir is longer than 3072 bytes");
  if (def.rule.kind != CompletionKind::kAll)
    return Status::InvalidArgument("output_dir needs rule = all: the job succeeds once every task's output is in place");
  return Status::Ok();
}

Status ValidateJob(const std::map<ExecutorId, ExecutorState>& executors, const JobDef& def) {
  uint32_t n = def.TaskCount();
  if (n == 0) return Status::InvalidArgument("job has no tasks");
  const CompletionRule& r = def.rule;
  if (r.kind == CompletionKind::kKOfN && (r.k == 0 || r.k > n))
    return Status::InvalidArgument("k_of_n needs 1 <= k <= tasks (k=" + std::to_string(r.k) +
                                   ", tasks=" + std::to_string(n) + ")");
  if (r.kind == CompletionKind::kQuorum) {
    if (r.k == 0 || r.k > n) return Status::InvalidArgument("quorum needs 1 <= k <= tasks");
    if (r.min_count > r.k) return Status::InvalidArgument("quorum needs min_count <= k");
    if (r.deadline_s < 0) return Status::InvalidArgument("quorum deadline must be >= 0");
  }
  if (Status s = ValidateOutputDir(def); !s.ok()) return s;
  // Check each distinct task shape once against the registered executors.
  std::set<std::string> seen;
  auto check = [&](const TaskDef& d) -> Status {
    if (d.kernel.empty()) return Status::InvalidArgument("a task has no kernel");
    if (d.memory_mb > kMaxMemoryMb)
      return Status::InvalidArgument("memory_mb " + std::to_string(d.memory_mb) + " is more than the most (" +
                                     std::to_string(kMaxMemoryMb) + " MB, 2^40)");
    if (def.wait_for_resources || executors.empty()) return Status::Ok();
    std::string key = d.kernel + '\0' + std::to_string(d.cpu_slots) + '\0' + std::to_string(d.gpus) + '\0' +
                      std::to_string(d.memory_mb);
    for (auto& [k, v] : d.labels) key += '\0' + k + '=' + v;
    if (!seen.insert(key).second) return Status::Ok();
    return CheckFeasible(executors, d);
  };
  for (const TaskDef& d : def.tasks)
    if (Status s = check(d); !s.ok()) return s;
  if (def.template_count > 0)
    if (Status s = check(def.templ); !s.ok()) return s;
  // Arguments: each distinct (kernel, args) once, against each distinct
  // declaration of the kernel among the executors offering it.
  KernelArgsIndex index(executors);
  std::set<std::pair<std::string, std::string>> checked;
  auto args = [&](const TaskDef& d) {
    return checked.emplace(d.kernel, d.args).second ? index.Check(d) : Status::Ok();
  };
  for (const TaskDef& d : def.tasks)
    if (Status s = args(d); !s.ok()) return s;
  if (def.template_count > 0) return args(def.templ);
  return Status::Ok();
}

KernelArgsIndex::KernelArgsIndex(const std::map<ExecutorId, ExecutorState>& executors) : executors_(executors) {}

Status KernelArgsIndex::Check(const TaskDef& d) {
  auto [it, fresh] = kernels_.try_emplace(d.kernel);
  Declarations& decl = it->second;
  if (fresh) {
    std::set<std::string> seen;
    for (const auto& [id, e] : executors_) {
      if (!e.kernels.count(d.kernel)) continue;
      auto a = e.desc.kernel_args.find(d.kernel);
      if (a == e.desc.kernel_args.end()) {
        decl.any = true;  // an executor whose kernel takes anything
        break;
      }
      if (seen.insert(DescribeKernelArgs(a->second)).second) decl.specs.push_back(&a->second);
    }
  }
  if (decl.any || decl.specs.empty()) return Status::Ok();
  Status first;
  for (const std::vector<KernelArgSpec>* specs : decl.specs) {
    Status s = CheckKernelArgs(d.kernel, d.args, *specs);
    if (s.ok()) return s;
    if (first.ok()) first = s;
  }
  return first;
}

}  // namespace tailcut::core
