#include "wire_convert.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>

#include <climits>
#include <cmath>
#include <sstream>
#include <unordered_set>

namespace tailcut {
namespace {

std::string Num(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

// Every number from the wire is checked here, before the core sees it; the
// error names the field (e.g. "tasks[3].timeout_s").
Status CheckSeconds(double v, const std::string& field) {
  if (std::isfinite(v) && v >= 0 && v <= kMaxWireSeconds) return Status::Ok();
  return Status::InvalidArgument(field + " must be a number of seconds in [0, " + Num(kMaxWireSeconds) + "], got " +
                                 Num(v));
}

StatusOr<TaskDef> TaskDefFromWire(const wire::TaskSpec& t, const std::string& field) {
  if (t.demand().cpu_slots() > kMaxWireSlots)
    return Status::InvalidArgument(field + ".demand.cpu_slots is " + std::to_string(t.demand().cpu_slots()) +
                                   "; the limit is " + std::to_string(kMaxWireSlots));
  if (t.demand().gpus() > kMaxWireGpus)
    return Status::InvalidArgument(field + ".demand.gpus is " + std::to_string(t.demand().gpus()) +
                                   "; the limit is " + std::to_string(kMaxWireGpus));
  if (t.demand().memory_mb() > kMaxMemoryMb)
    return Status::InvalidArgument(field + ".demand.memory_mb is " + std::to_string(t.demand().memory_mb()) +
                                   "; the limit is " + std::to_string(kMaxMemoryMb) + " (2^40 MB)");
  double size = t.features().input_size();
  if (!std::isfinite(size) || size < 0)  // feeds the regression predictor
    return Status::InvalidArgument(field + ".features.input_size must be a finite number >= 0, got " + Num(size));
  if (Status s = CheckSeconds(t.timeout_s(), field + ".timeout_s"); !s.ok()) return s;
  const wire::WorkShare& sh = t.share();
  if (sh.total() > 0 && (sh.begin() > sh.total() || sh.count() > sh.total() - sh.begin()))
    return Status::InvalidArgument(field + ".share [" + std::to_string(sh.begin()) + ", +" +
                                   std::to_string(sh.count()) + ") is outside its total " + std::to_string(sh.total()));
  TaskDef d;
  d.kernel = t.kernel();
  d.args = t.args();
  d.cpu_slots = std::max<uint32_t>(t.demand().cpu_slots(), 1);
  d.gpus = t.demand().gpus();
  d.memory_mb = t.demand().memory_mb();
  for (auto& [k, v] : t.demand().labels()) d.labels.emplace_back(k, v);
  std::sort(d.labels.begin(), d.labels.end());  // map order is unspecified
  d.task_class = t.features().task_class();
  d.input_size = size;
  d.timeout_s = t.timeout_s();
  d.share = WorkShare{sh.begin(), sh.count(), sh.total()};
  if (t.has_idempotent()) d.idempotent = t.idempotent();
  d.args_template = t.args_template();
  for (const wire::TaskRef& r : t.inputs()) {
    if (r.job_id() == 0) return Status::InvalidArgument(field + ".inputs: job_id 0 is no job");
    d.inputs.push_back({r.job_id(), r.task_index(), r.all_tasks()});
  }
  return d;
}

}  // namespace

Status CheckNames(const wire::JobSpec& spec) {
  auto check = [](const wire::TaskSpec& t, const std::string& field) {
    for (auto [name, what] : {std::pair{&t.kernel(), ".kernel"}, std::pair{&t.features().task_class(), ".features.task_class"}})
      if (name->size() > kMaxWireNameBytes)
        return Status::InvalidArgument(field + what + " is " + std::to_string(name->size()) + " bytes; the limit is " +
                                       std::to_string(kMaxWireNameBytes));
    return Status::Ok();
  };
  if (spec.has_template_())
    if (Status s = check(spec.template_(), "template"); !s.ok()) return s;
  for (int i = 0; i < spec.tasks_size(); ++i)
    if (Status s = check(spec.tasks(i), "tasks[" + std::to_string(i) + "]"); !s.ok()) return s;
  return Status::Ok();
}

uint64_t TaskCountOf(const wire::JobSpec& spec) {
  return static_cast<uint64_t>(spec.tasks_size()) + spec.template_count();
}

namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::internal::WireFormatLite;

// Walks the fields of one message, calling on(field, in) for each
// length-delimited field (which must consume or skip it) and skipping the
// rest; varints go to on_varint. False on ill-formed bytes.
template <typename OnBytes, typename OnVarint>
bool Walk(CodedInputStream& in, OnBytes on_bytes, OnVarint on_varint) {
  while (uint32_t tag = in.ReadTag()) {
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    switch (WireFormatLite::GetTagWireType(tag)) {
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
        uint32_t len = 0;
        if (!in.ReadVarint32(&len)) return false;
        auto limit = in.PushLimit(static_cast<int>(len));
        if (!on_bytes(field, in)) return false;
        if (!in.Skip(in.BytesUntilLimit())) return false;
        in.PopLimit(limit);
        break;
      }
      case WireFormatLite::WIRETYPE_VARINT: {
        uint64_t v = 0;
        if (!in.ReadVarint64(&v)) return false;
        on_varint(field, v);
        break;
      }
      default:
        if (!WireFormatLite::SkipField(&in, tag)) return false;
    }
  }
  return true;
}

}  // namespace

uint64_t SubmitTaskCountOfFrame(const void* data, size_t size, uint64_t* request_id) {
  if (size > static_cast<size_t>(INT32_MAX)) return 0;
  CodedInputStream in(static_cast<const uint8_t*>(data), static_cast<int>(size));
  uint64_t tasks = 0, template_count = 0;
  auto job_spec = [&](CodedInputStream& s) {
    return Walk(
        s, [&](int f, CodedInputStream&) { tasks += f == wire::JobSpec::kTasksFieldNumber; return true; },
        [&](int f, uint64_t v) {
          if (f == wire::JobSpec::kTemplateCountFieldNumber) template_count = static_cast<uint32_t>(v);
        });
  };
  auto submit = [&](CodedInputStream& s) {
    return Walk(
        s, [&](int f, CodedInputStream& j) { return f == wire::SubmitJob::kJobFieldNumber ? job_spec(j) : true; },
        [](int, uint64_t) {});
  };
  Walk(
      in, [&](int f, CodedInputStream& s) { return f == wire::ClientRequest::kSubmitFieldNumber ? submit(s) : true; },
      [&](int f, uint64_t v) {
        if (f == wire::ClientRequest::kRequestIdFieldNumber && request_id) *request_id = v;
      });
  return tasks + template_count;
}

std::string DeterministicBytes(const google::protobuf::MessageLite& msg) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream s(&out);
    google::protobuf::io::CodedOutputStream c(&s);
    c.SetSerializationDeterministic(true);
    msg.SerializeToCodedStream(&c);
  }
  return out;
}

StatusOr<JobDef> JobDefFromWire(const wire::JobSpec& spec) {
  uint64_t n = TaskCountOf(spec);
  if (n > kTaskCountCeiling)  // the server checks its configured caps first (CheckAdmission)
    return Status::TooLarge("job has " + std::to_string(n) + " tasks; the limit is " +
                            std::to_string(kTaskCountCeiling));
  if (spec.template_count() > 0 && spec.template_().kernel().empty())
    return Status::InvalidArgument("template_count is set but the template has no kernel");
  if (spec.max_attempts() > kMaxAttemptsCeiling)
    return Status::InvalidArgument("max_attempts is " + std::to_string(spec.max_attempts()) + "; the limit is " +
                                   std::to_string(kMaxAttemptsCeiling));
  if (Status s = CheckSeconds(spec.timeout_s(), "timeout_s"); !s.ok()) return s;
  if (Status s = CheckSeconds(spec.rule().deadline_s(), "rule.deadline_s"); !s.ok()) return s;
  JobDef d;
  d.name = spec.name();
  d.tasks.reserve(spec.tasks_size());
  for (int i = 0; i < spec.tasks_size(); ++i) {
    auto t = TaskDefFromWire(spec.tasks(i), "tasks[" + std::to_string(i) + "]");
    if (!t.ok()) return t.status();
    d.tasks.push_back(std::move(t).value());
  }
  auto templ = TaskDefFromWire(spec.template_(), "template");
  if (!templ.ok()) return templ.status();
  d.templ = std::move(templ).value();
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
  d.owner = spec.owner();
  d.timeout_s = spec.timeout_s();
  d.divisible_units = spec.divisible_units();
  if (spec.has_idempotent()) d.idempotent = spec.idempotent();
  d.output_dir = spec.output_dir();
  d.after.assign(spec.after().begin(), spec.after().end());
  d.priority = spec.priority();
  if (d.priority < -kMaxJobPriority || d.priority > kMaxJobPriority)
    return Status::InvalidArgument("priority is " + std::to_string(d.priority) + "; it must be in -" +
                                   std::to_string(kMaxJobPriority) + ".." + std::to_string(kMaxJobPriority));
  if (d.divisible_units > 0) {
    bool pinned = d.templ.share.divisible();
    for (const TaskDef& t : d.tasks) pinned |= t.share.divisible();
    if (pinned)
      return Status::InvalidArgument("a job with divisible_units has its shares sized by the scheduler: "
                                     "its tasks cannot carry a share of their own");
  }
  return d;
}

double SanitizeRunSeconds(double run_s) {
  return std::isfinite(run_s) && run_s >= 0 && run_s <= kMaxWireSeconds ? run_s : 0;
}

namespace {

// The result's run time, unless it is no time at all (NaN, infinite,
// negative, over a year): then 0, which lets the core measure it, so the
// predictors never learn a forged or broken figure.
double RunSeconds(const wire::AttemptResult& res, ExecutorId e, const BadInputFn& bad) {
  double run_s = SanitizeRunSeconds(res.run_s());
  if (run_s != res.run_s())
    bad("AttemptResult.run_s = " + std::to_string(res.run_s()) + " from executor " + std::to_string(e) +
        " replaced by the scheduler's own measure");
  return run_s;
}

}  // namespace

// The label an executor's Register.python_version becomes (it wins over a
// configured label of that name).
constexpr const char* kPythonLabel = "python";

ExecutorDesc ExecutorDescFromWire(const wire::Register& r, size_t ordinal) {
  ExecutorDesc d;
  d.name = r.name().empty() ? "executor-" + std::to_string(ordinal) : r.name();
  d.host = r.host();
  // Capped, so that slot sums over all executors stay far from overflow.
  d.slots = std::clamp<uint32_t>(r.cpu_slots(), 1, kMaxWireSlots);
  d.max_queued = std::min<uint32_t>(r.max_queued(), kMaxWireSlots);
  d.gpus = std::min<uint32_t>(static_cast<uint32_t>(r.gpus_size()), kMaxWireGpus);
  d.memory_mb = std::min(r.memory_mb(), kMaxMemoryMb);
  for (auto& [k, v] : r.labels())
    if (k != kPythonLabel || r.python_version().empty()) d.labels.emplace_back(k, v);
  // The interpreter's version as a label, so pickled-function tasks (which
  // demand it) are placed only where they unpickle (docs/PYTHON.md).
  if (!r.python_version().empty()) d.labels.emplace_back(kPythonLabel, r.python_version().substr(0, 32));
  std::sort(d.labels.begin(), d.labels.end());
  d.kernels.assign(r.kernels().begin(), r.kernels().end());
  // The safe side: a kernel the executor does not call idempotent is not.
  std::unordered_set<std::string> pure(r.idempotent_kernels().begin(), r.idempotent_kernels().end());
  for (const std::string& k : d.kernels)
    if (!pure.count(k)) d.side_effect_kernels.push_back(k);
  return d;
}

TakeBackCounts TakeBackFromWire(SchedulerCore& core, ExecutorId e, const wire::Register& r, wire::Work* cancel,
                                const BadInputFn& bad) {
  TakeBackCounts n;
  for (const auto& res : r.undelivered())
    if (res.outcome() == wire::AttemptResult::OK &&
        core.CommitOrphanResult(res.job_id(), res.task_index(), res.attempt_id(), e, res.output(),
                                RunSeconds(res, e, bad)))
      ++n.committed;
  for (const auto& h : r.running()) {
    if (core.AdoptAttempt(h.attempt_id(), h.job_id(), h.task_index(), e, h.started()).ok())
      ++n.adopted;
    else
      cancel->add_cancel(h.attempt_id());
  }
  return n;
}

void ApplyReport(SchedulerCore& core, ExecutorId e, const wire::Report& r, const BadInputFn& bad) {
  for (const auto& s : r.started())
    if (core.AcceptsReport(e, s.attempt_id())) core.AttemptStarted(s.attempt_id());
  for (const auto& p : r.progress()) {
    if (!core.AcceptsReport(e, p.attempt_id())) continue;
    if (!std::isfinite(p.fraction()) || p.fraction() < 0 || p.fraction() > 1) {
      bad("Report.progress.fraction = " + std::to_string(p.fraction()) + " from executor " + std::to_string(e) +
          " ignored");
      continue;
    }
    core.AttemptProgress(p.attempt_id(), p.fraction());
  }
  for (const auto& res : r.results()) {
    if (!core.AcceptsReport(e, res.attempt_id())) continue;
    double run_s = RunSeconds(res, e, bad);
    switch (res.outcome()) {
      case wire::AttemptResult::OK: core.AttemptSucceeded(res.attempt_id(), res.output(), run_s); break;
      case wire::AttemptResult::FAILED: core.AttemptFailed(res.attempt_id(), res.error(), run_s); break;
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
  out->set_owner(i.owner);
  out->set_name(i.name);
  // Running in the core, but not runnable before its parents: queued.
  out->set_state(i.state == JobState::kRunning && !i.waiting_for.empty() ? wire::JOB_QUEUED : JobStateToWire(i.state));
  out->clear_after();
  out->clear_waiting_for();
  for (JobId p : i.after) out->add_after(p);
  for (JobId p : i.waiting_for) out->add_waiting_for(p);
  out->set_tasks(i.tasks);
  out->set_committed(i.committed);
  out->set_running(i.running);
  out->set_attempts(i.attempts);
  out->set_copies(i.copies);
  out->set_failed_attempts(i.failed_attempts);
  out->set_reason(i.reason);
  out->set_submitted_at_s(i.submitted);
  out->set_finished_at_s(i.finished);
  out->set_copies_refused_side_effects(i.copies_refused_side_effects);
  out->set_priority(i.priority);
  out->set_copies_preempted(i.copies_preempted);
}

StatusOr<JobDef> JobDefFromJournal(const std::string& bytes) {
  wire::JobSpec spec;
  if (!spec.ParseFromString(bytes)) return Status::InvalidArgument("unparseable JobSpec");
  return JobDefFromWire(spec);
}

wire::ExecutorHealth::State HealthToWire(NodeHealth h) {
  switch (h) {
    case NodeHealth::kSuspect: return wire::ExecutorHealth::SUSPECT;
    case NodeHealth::kFailSlow: return wire::ExecutorHealth::FAIL_SLOW;
    case NodeHealth::kRecovered: return wire::ExecutorHealth::RECOVERED;
    default: return wire::ExecutorHealth::HEALTHY;
  }
}

void ExecutorStatusToWire(const ExecutorStatusInfo& e, Time now, wire::ExecutorInfo* x) {
  x->set_executor_id(e.id);
  x->set_name(e.name);
  x->set_host(e.host);
  x->set_cpu_slots(e.slots);
  x->set_gpus(e.gpus);
  for (auto& [k, v] : e.labels) (*x->mutable_labels())[k] = v;
  x->set_running(e.running);
  x->set_finished(e.finished);
  x->set_quarantined(e.quarantined);
  x->set_last_seen_s_ago(now - e.last_seen);
  x->mutable_health()->set_state(HealthToWire(e.health.state));
  x->mutable_health()->set_speed_factor(e.health.speed_factor);
}

void CommittedOutputToWire(const CommittedOutput& o, wire::TaskResult* r) {
  r->set_task_index(o.task);
  r->set_attempt_id(o.attempt);
  r->set_executor_id(o.executor);
  r->set_output(o.output);
  r->set_run_s(o.run_s);
  r->set_copy(o.copy);
}

void TaskCommittedToWire(TaskCommittedCmd&& c, wire::TaskResult* r) {
  r->set_task_index(c.task);
  r->set_attempt_id(c.attempt);
  r->set_executor_id(c.executor);
  r->set_output(std::move(c.output));
  r->set_run_s(c.run_s);
  r->set_copy(c.copy);
}

void TraceRowToWire(const TraceRow& r, wire::TraceAttempt* a) {
  a->set_task(r.task);
  a->set_executor(r.executor);
  a->set_start_s(r.start);
  a->set_end_s(r.end);
  a->set_task_class(r.task_class);
  a->set_input_size(r.input_size);
}

void LaunchToWire(LaunchCmd&& l, wire::Assignment* a) {
  LaunchSpec& t = *l.spec;
  a->set_attempt_id(l.attempt);
  a->set_job_id(l.job);
  a->set_task_index(l.task);
  a->set_kernel(std::move(t.kernel));
  a->set_args(std::move(t.args));
  a->set_task_count(l.task_count);
  a->set_copy(l.copy);
  a->set_args_template(t.args_template);
  a->set_idempotent(l.idempotent);
  a->mutable_demand()->set_cpu_slots(t.cpu_slots);
  a->mutable_demand()->set_gpus(t.gpus);
  a->mutable_demand()->set_memory_mb(t.memory_mb);
  if (const WorkShare& sh = l.share.divisible() ? l.share : t.share; sh.divisible()) {
    a->mutable_share()->set_begin(sh.begin);
    a->mutable_share()->set_count(sh.count);
    a->mutable_share()->set_total(sh.total);
  }
  for (LaunchInput& r : t.inputs) {
    wire::TaskInput* x = a->add_inputs();
    x->set_job_id(r.job);
    x->set_task_index(r.task);
    x->set_output(std::move(r.output));
    x->set_path(std::move(r.path));
  }
  if (!t.output_dir.empty()) a->set_output_dir(std::move(t.output_dir));
}

wire::Error::Code ErrorCodeFor(const Status& s, bool submitting) {
  switch (s.code()) {
    case Status::Code::kNotFound: return submitting ? wire::Error::UNKNOWN_KERNEL : wire::Error::UNKNOWN_JOB;
    case Status::Code::kFailedPrecondition: return submitting ? wire::Error::INFEASIBLE : wire::Error::INVALID_ARGUMENT;
    case Status::Code::kInvalidArgument: return wire::Error::INVALID_ARGUMENT;
    case Status::Code::kPermissionDenied: return wire::Error::NOT_YOUR_JOB;
    case Status::Code::kResourceExhausted: return wire::Error::BUSY;
    case Status::Code::kTooLarge: return wire::Error::TOO_LARGE;
    default: return wire::Error::INTERNAL;
  }
}

}  // namespace tailcut
