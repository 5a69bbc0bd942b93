#include "queries.h"

#include <algorithm>

#include "lifecycle.h"

namespace tailcut::core {

Status CheckAdmission(const CoreState& s, uint64_t tasks) {
  const CoreOptions& o = s.opt;
  uint64_t fits = std::min(o.max_tasks_per_job, o.max_queued_tasks);
  if (tasks > fits)
    return Status::TooLarge("job has " + std::to_string(tasks) + " tasks; the limit is " + std::to_string(fits) +
                            (o.max_tasks_per_job <= o.max_queued_tasks ? " (core.max_tasks_per_job)"
                                                                       : " (core.max_queued_tasks)"));
  if (s.queued_tasks + tasks > o.max_queued_tasks)
    return Status::ResourceExhausted("scheduler busy: unfinished jobs hold " + std::to_string(s.queued_tasks) +
                                     " tasks, and " + std::to_string(tasks) + " more would exceed " +
                                     std::to_string(o.max_queued_tasks) + " (core.max_queued_tasks); retry later");
  return Status::Ok();
}

StatusOr<JobStatusInfo> JobStatusOf(const CoreState& s, JobId id) {
  const Job* job = s.FindJob(id);
  if (!job) return Status::NotFound("no job " + std::to_string(id) + " (unknown or expired)");
  return MakeStatusInfo(*job);
}

StatusOr<std::vector<CommittedOutput>> JobOutputsOf(const CoreState& s, JobId id) {
  const Job* job = s.FindJob(id);
  if (!job) return Status::NotFound("no job " + std::to_string(id) + " (unknown or expired)");
  if (!job->def.return_outputs)
    return Status::FailedPrecondition("job " + std::to_string(id) + " was submitted without return_outputs");
  return job->outputs;
}

const TaskDef* TaskOf(const CoreState& s, JobId j, TaskIndex t) {
  const Job* job = s.FindJob(j);
  return job && t < job->Count() ? &job->def.Task(t) : nullptr;
}

std::vector<ExecutorStatusInfo> ExecutorList(const CoreState& s, ExecutorId after, size_t limit) {
  std::vector<ExecutorStatusInfo> out;
  for (auto it = s.executors.upper_bound(after); it != s.executors.end() && out.size() < limit; ++it) {
    const auto& [id, e] = *it;
    ExecutorStatusInfo i;
    i.id = id;
    i.name = e.desc.name;
    i.host = e.desc.host;
    i.slots = e.desc.slots;
    i.gpus = e.desc.gpus;
    i.running = static_cast<uint32_t>(e.attempts.size());
    i.finished = e.finished;
    i.quarantined = e.quarantined;
    i.last_seen = e.last_seen;
    i.labels = e.desc.labels;
    i.health = s.predictors->Health(id);
    out.push_back(std::move(i));
  }
  return out;
}

uint64_t WaitingTasks(const CoreState& s) {
  // Retry entries of tasks committed meanwhile go stale (counted until
  // Pump pops them); exact enough for a gauge, and costs no bookkeeping.
  uint64_t n = 0;
  for (JobId id : s.running_jobs) {
    const Job& j = s.jobs.at(id);
    if (!j.waiting_for.empty()) continue;  // queued behind its parents, not for a slot
    n += j.Count() - std::min(j.next_unlaunched, j.Count()) + j.retry.size();
  }
  return n;
}

std::vector<std::string> DisabledPolicies(const CoreState& s) {
  std::vector<std::string> out;
  for (const GuardedPolicy& p : s.policies)
    if (!p.disabled.empty()) out.push_back(p.name + ": " + p.disabled);
  return out;
}

}  // namespace tailcut::core
