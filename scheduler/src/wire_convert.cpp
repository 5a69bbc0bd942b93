#include "wire_convert.h"

#include <cmath>

namespace tailcut {
namespace {

TaskDef TaskDefFromWire(const wire::TaskSpec& t) {
  TaskDef d;
  d.kernel = t.kernel();
  d.args = t.args();
  d.cpu_slots = std::max<uint32_t>(t.demand().cpu_slots(), 1);
  d.gpus = t.demand().gpus();
  for (auto& [k, v] : t.demand().labels()) d.labels.emplace_back(k, v);
  std::sort(d.labels.begin(), d.labels.end());  // map order is unspecified
  d.task_class = t.features().task_class();
  d.input_size = t.features().input_size();
  d.timeout_s = t.timeout_s();
  return d;
}

}  // namespace

StatusOr<JobDef> JobDefFromWire(const wire::JobSpec& spec) {
  uint64_t n = static_cast<uint64_t>(spec.tasks_size()) + spec.template_count();
  if (n > kMaxTasksPerJob)
    return Status::InvalidArgument("job has " + std::to_string(n) + " tasks; the limit is " +
                                   std::to_string(kMaxTasksPerJob));
  if (spec.template_count() > 0 && spec.template_().kernel().empty())
    return Status::InvalidArgument("template_count is set but the template has no kernel");
  JobDef d;
  d.name = spec.name();
  d.tasks.reserve(spec.tasks_size());
  for (const auto& t : spec.tasks()) d.tasks.push_back(TaskDefFromWire(t));
  d.templ = TaskDefFromWire(spec.template_());
  d.template_count = spec.template_count();
  switch (spec.rule().kind()) {
    case wire::CompletionRule::ALL: d.rule.kind = CompletionKind::kAll; break;
    case wire::CompletionRule::K_OF_N: d.rule.kind = CompletionKind::kKOfN; break;
    case wire::CompletionRule::QUORUM: d.rule.kind = CompletionKind::kQuorum; break;
    default: return Status::InvalidArgument("unknown completion rule " + std::to_string(spec.rule().kind()));
  }
  d.rule.k = spec.rule().k();
  d.rule.min_count = spec.rule().min_count();
  d.rule.deadline_s = spec.rule().deadline_s();
  d.max_attempts = spec.max_attempts();
  d.wait_for_resources = spec.wait_for_resources();
  d.stream_results = spec.stream_results();
  d.return_outputs = spec.return_outputs();
  d.request_key = spec.request_key();
  d.timeout_s = spec.timeout_s();
  for (double limit : {d.timeout_s, d.templ.timeout_s})
    if (limit < 0 || !std::isfinite(limit)) return Status::InvalidArgument("timeout_s must be >= 0");
  for (const TaskDef& t : d.tasks)
    if (t.timeout_s < 0 || !std::isfinite(t.timeout_s)) return Status::InvalidArgument("timeout_s must be >= 0");
  return d;
}

ExecutorDesc ExecutorDescFromWire(const wire::Register& r, size_t ordinal) {
  ExecutorDesc d;
  d.name = r.name().empty() ? "executor-" + std::to_string(ordinal) : r.name();
  d.host = r.host();
  d.slots = std::max<uint32_t>(r.cpu_slots(), 1);
  d.max_queued = r.max_queued();
  d.gpus = static_cast<uint32_t>(r.gpus_size());
  for (auto& [k, v] : r.labels()) d.labels.emplace_back(k, v);
  std::sort(d.labels.begin(), d.labels.end());
  d.kernels.assign(r.kernels().begin(), r.kernels().end());
  return d;
}

TakeBackCounts TakeBackFromWire(SchedulerCore& core, ExecutorId e, const wire::Register& r, wire::Work* cancel) {
  TakeBackCounts n;
  for (const auto& res : r.undelivered())
    if (res.outcome() == wire::AttemptResult::OK &&
        core.CommitOrphanResult(res.job_id(), res.task_index(), res.attempt_id(), e, res.output(), res.run_s()))
      ++n.committed;
  for (const auto& h : r.running()) {
    if (core.AdoptAttempt(h.attempt_id(), h.job_id(), h.task_index(), e, h.started()).ok())
      ++n.adopted;
    else
      cancel->add_cancel(h.attempt_id());
  }
  return n;
}

void ApplyReport(SchedulerCore& core, ExecutorId e, const wire::Report& r) {
  for (const auto& s : r.started())
    if (core.ExecutorOfAttempt(s.attempt_id()) == e) core.AttemptStarted(s.attempt_id());
  for (const auto& p : r.progress())
    if (core.ExecutorOfAttempt(p.attempt_id()) == e) core.AttemptProgress(p.attempt_id(), p.fraction());
  for (const auto& res : r.results()) {
    if (core.ExecutorOfAttempt(res.attempt_id()) != e) continue;
    switch (res.outcome()) {
      case wire::AttemptResult::OK: core.AttemptSucceeded(res.attempt_id(), res.output(), res.run_s()); break;
      case wire::AttemptResult::FAILED: core.AttemptFailed(res.attempt_id(), res.error(), res.run_s()); break;
      default: core.AttemptDropped(res.attempt_id(), "executor dropped it: " + res.error()); break;
    }
  }
}

wire::JobState JobStateToWire(JobState s) {
  switch (s) {
    case JobState::kRunning: return wire::JOB_RUNNING;
    case JobState::kSucceeded: return wire::JOB_SUCCEEDED;
    case JobState::kFailed: return wire::JOB_FAILED;
    case JobState::kCancelled: return wire::JOB_CANCELLED;
  }
  return wire::JOB_STATE_UNSPECIFIED;
}

void JobStatusToWire(const JobStatusInfo& i, wire::JobStatus* out) {
  out->set_job_id(i.id);
  out->set_request_key(i.request_key);
  out->set_name(i.name);
  out->set_state(JobStateToWire(i.state));
  out->set_tasks(i.tasks);
  out->set_committed(i.committed);
  out->set_running(i.running);
  out->set_attempts(i.attempts);
  out->set_copies(i.copies);
  out->set_failed_attempts(i.failed_attempts);
  out->set_reason(i.reason);
  out->set_submitted_at_s(i.submitted);
  out->set_finished_at_s(i.finished);
}

wire::Error::Code ErrorCodeFor(const Status& s, bool submitting) {
  switch (s.code()) {
    case Status::Code::kNotFound: return submitting ? wire::Error::UNKNOWN_KERNEL : wire::Error::UNKNOWN_JOB;
    case Status::Code::kFailedPrecondition: return submitting ? wire::Error::INFEASIBLE : wire::Error::INVALID_ARGUMENT;
    case Status::Code::kInvalidArgument: return wire::Error::INVALID_ARGUMENT;
    default: return wire::Error::INTERNAL;
  }
}

}  // namespace tailcut
