#include "lifecycle.h"

#include <algorithm>
#include <cmath>

#include "tailcut/common/log.h"

namespace tailcut::core {

JobStatusInfo MakeStatusInfo(const Job& job) {
  JobStatusInfo s;
  s.id = job.id;
  s.name = job.def.name;
  s.state = job.state;
  s.tasks = job.Count();
  s.committed = job.committed;
  s.running = job.running;
  s.attempts = job.attempts;
  s.copies = job.copies;
  s.failed_attempts = job.failed_attempts;
  s.reason = job.reason;
  s.submitted = job.submitted;
  s.finished = job.finished;
  s.request_key = job.def.request_key;
  s.owner = job.def.owner;
  s.copies_refused_side_effects = job.copies_refused;
  s.after = job.def.after;
  s.waiting_for = job.waiting_for;
  s.priority = job.def.priority;
  s.copies_preempted = job.copies_preempted;
  return s;
}

Job& Lifecycle::AddJob(JobDef def, JobId id) {
  if (id == 0) id = s_.next_job_id++;
  s_.next_job_id = std::max(s_.next_job_id, id + 1);
  Job& job = s_.jobs[id];
  job.id = id;
  job.def = std::move(def);
  job.submitted = s_.Now();
  job.tasks.resize(job.Count());
  s_.queued_tasks += job.Count();
  switch (job.def.rule.kind) {
    case CompletionKind::kAll: job.needed = job.Count(); break;
    case CompletionKind::kKOfN:
    case CompletionKind::kQuorum: job.needed = job.def.rule.k; break;
  }
  if (job.def.max_attempts == 0) job.def.max_attempts = s_.opt.max_attempts;
  LinkParents(s_, job);
  double limit = job.def.timeout_s > 0 ? job.def.timeout_s : s_.opt.job_timeout_s;
  // A job that waits for parents gets its limit when it may run (dependencies.cpp).
  if (limit > 0 && job.waiting_for.empty()) s_.job_deadlines.push({job.submitted + limit, id});
  if (job.waiting_for.empty()) ArmQuorumDeadline(s_, job);
  s_.running_jobs.insert(id);
  job.owner = &s_.owner_book.Of(job.def.owner);
  job.owner->jobs++;
  place_.MakeRunnable(job);
  return job;
}

void Lifecycle::RecordCommit(Job& job, TaskIndex t, AttemptId a, ExecutorId e, double run_s, std::string output,
                             bool notify, bool copy) {
  job.tasks[t].phase = TaskPhase::kCommitted;
  job.committed++;
  if (notify) s_.counters.tasks_committed++;  // a replayed commit was counted by its own run
  job.run_times.push_back(static_cast<float>(run_s));
  job.typical_run_s = job.typical_run_s < 0 ? run_s : 0.9 * job.typical_run_s + 0.1 * run_s;
  if (run_s > 0) s_.typical_run_s = s_.typical_run_s < 0 ? run_s : 0.99 * s_.typical_run_s + 0.01 * run_s;
  place_.UpdatePipelining(job);
  if (notify)
    for (CoreObserver* o : s_.observers)
      o->OnTaskCommitted(job.id, t, a, e, run_s, job.def.return_outputs ? &output : nullptr);
  if (job.def.return_outputs) {
    bool streamed = notify && job.def.stream_results;  // then the output is still needed below
    job.outputs.push_back({t, a, e, run_s, streamed ? output : std::move(output), copy});
  }
  if (notify && job.def.stream_results) s_.Emit(TaskCommittedCmd{job.id, t, a, e, run_s, std::move(output), copy});
  if (notify && !job.def.output_dir.empty()) {
    const ExecutorState* exec = s_.FindExec(e);
    AwaitPromotion(job, t, a, e, exec ? exec->desc.host : "");
  }
}

bool Lifecycle::AnswerPromotion(JobId id, TaskIndex t, AttemptId a, const std::string& error) {
  auto it = s_.promotions.find({id, t});
  if (it == s_.promotions.end() || it->second.attempt != a) return false;
  s_.promotions.erase(it);
  for (CoreObserver* o : s_.observers) o->OnPromotionAnswered(id, t, a, error);
  Job* job = s_.FindJob(id);
  if (!job || job->state != JobState::kRunning) return true;
  job->promoting--;
  if (!error.empty())
    FinishJob(*job, JobState::kFailed, "task " + std::to_string(t) + "'s output could not be promoted: " + error);
  else if (job->Complete())
    FinishJob(*job, JobState::kSucceeded, "");
  s_.dirty = true;
  return true;
}

void Lifecycle::AwaitPromotion(Job& job, TaskIndex t, AttemptId a, ExecutorId e, std::string host) {
  PromoteCmd cmd{job.id, t, a, e, std::move(host), job.def.output_dir};
  auto [it, fresh] = s_.promotions.insert_or_assign({job.id, t}, cmd);
  if (fresh && job.state == JobState::kRunning) job.promoting++;
  for (CoreObserver* o : s_.observers) o->OnPromotionPending(cmd);
  s_.Emit(std::move(cmd));
}

ExecutorState& Lifecycle::AddExecutor(ExecutorDesc desc) {
  ExecutorId id = s_.next_executor_id++;
  ExecutorState& e = s_.executors[id];
  s_.exec_index[id] = &e;
  e.id = id;
  e.desc = std::move(desc);
  e.desc.slots = std::max<uint32_t>(e.desc.slots, 1);
  e.kernels.insert(e.desc.kernels.begin(), e.desc.kernels.end());
  s_.kernel_names.Offer(e.kernels, &e.kernel_bits);
  std::sort(e.desc.labels.begin(), e.desc.labels.end());
  e.identity = std::make_shared<const std::string>(e.desc.identity.empty() ? e.desc.name : e.desc.identity);
  s_.side_effect_kernels.insert(e.desc.side_effect_kernels.begin(), e.desc.side_effect_kernels.end());
  s_.Heard(e);
  s_.total_slots += e.desc.slots;
  s_.free_slots += CoreState::FreeSlotsOf(e);
  s_.queue_room.Add(id, CoreState::QueueKey(e));
  s_.executors_epoch++;
  place_.RefreshAvoid(e);
  place_.MarkFree(e);
  // Jobs parked for want of a fitting executor were woken by MarkFree.
  s_.PostExecutor(id, ExecutorChange::kJoined);
  s_.dirty = true;
  return e;
}

void Lifecycle::Launch(Job& job, TaskIndex t, ExecutorId eid, bool copy, bool restart) {
  ExecutorState& e = s_.executors.at(eid);
  Attempt& a = Link(job, t, e, s_.next_attempt_id++, copy);
  job.attempts++;
  if (copy) job.copies++;
  ++(copy ? s_.counters.attempts_copy : restart ? s_.counters.attempts_restart : s_.counters.attempts_first);
  const bool idempotent = s_.Idempotent(job, t);
  LaunchCmd l{a.id, eid, job.id, t, copy, {}, idempotent, job.Count(), std::nullopt, {}};
  for (CoreObserver* o : s_.observers) o->OnAttemptLaunched(l, *e.identity);
  s_.Emit(std::move(l));
}

Attempt& Lifecycle::Link(Job& job, TaskIndex t, ExecutorState& e, AttemptId id, bool copy) {
  const TaskDef& d = job.def.Task(t);
  Task& task = job.tasks[t];
  Attempt a;
  a.id = id;
  a.job = job.id;
  a.task = t;
  a.executor = e.id;
  a.queued = s_.Now();
  a.copy = copy;
  a.slots = std::max<uint32_t>(d.cpu_slots, 1);
  a.gpus = d.gpus;
  a.memory_mb = d.memory_mb;
  a.next = task.live_head;
  task.live_head = a.id;
  if (task.live > 0) s_.extra_live++;
  task.live++;
  task.phase = TaskPhase::kActive;
  s_.ChangeSlots(e, [&] { e.used_slots += a.slots; });
  e.used_gpus += a.gpus;
  e.used_memory_mb += a.memory_mb;
  if (job.owner) job.owner->slots += a.slots;
  if (copy) s_.live_copies.insert(a.id);
  e.attempts.Insert(a.id);
  e.handed++;
  job.running++;
  if (double limit = TimeLimit(job, t, e.id); limit > 0) {
    a.deadline = a.run_deadline = a.queued + limit;
    // Only an attempt that had a free slot should start at once; one
    // queued behind others (tiny tasks pipelined) waits for them.
    double start = e.used_slots <= e.desc.slots ? StartLimit(job, t, e.id) : 0;
    if (start > 0 && a.queued + start < a.deadline) a.deadline = a.queued + start;
  }
  Attempt& live = s_.attempts.emplace(a.id, a).first->second;
  if (live.deadline > 0) PushDeadline(live);
  place_.AttemptLinked(job, live);
  s_.PostAttempt(PolicyEvent::Kind::kLaunched, live);
  return live;
}

double Lifecycle::TimeLimit(const Job& job, TaskIndex t, ExecutorId e) const {
  const TaskDef& d = job.def.Task(t);
  const CoreOptions& o = s_.opt;
  if (d.timeout_s > 0) return d.timeout_s;
  if (o.task_timeout_s > 0) return o.task_timeout_s;
  if (o.attempt_timeout_ratio <= 0) return 0;
  LatencyEstimate est = s_.predictors->Predict(d.ClassName(), d.input_size, e);
  if (!est.known() || !std::isfinite(est.p99)) return o.attempt_timeout_ceiling_s;
  return std::clamp(o.attempt_timeout_ratio * est.p99, o.attempt_timeout_floor_s, o.attempt_timeout_ceiling_s);
}

double Lifecycle::StartLimit(const Job& job, TaskIndex t, ExecutorId e) const {
  const CoreOptions& o = s_.opt;
  if (o.attempt_timeout_ratio <= 0) return 0;
  const TaskDef& d = job.def.Task(t);
  LatencyEstimate est = s_.predictors->Predict(d.ClassName(), d.input_size, e);
  if (!est.known() || !std::isfinite(est.p99)) return o.attempt_timeout_floor_s;
  return std::clamp(o.attempt_timeout_ratio * est.p99, o.attempt_start_floor_s, o.attempt_timeout_ceiling_s);
}

void Lifecycle::Started(Attempt& a) {
  if (a.run_deadline <= 0 || a.deadline == a.run_deadline) return;
  a.deadline = a.run_deadline;
  PushDeadline(a);  // the start limit's heap entry is stale now
}

void Lifecycle::PushDeadline(const Attempt& a) {
  s_.attempt_deadlines.push({a.deadline, a.id});
  if (s_.attempt_deadlines.size() >= 2 * s_.attempts.size() + 1024) RebuildDeadlines();
}

void Lifecycle::PostponeDeadlines(double s) {
  for (auto& [id, a] : s_.attempts) {
    if (a.deadline <= 0) continue;
    a.deadline += s;
    if (a.run_deadline > 0) a.run_deadline += s;
  }
  RebuildDeadlines();
}

// The heap anew from the live attempts, without its stale entries.
void Lifecycle::RebuildDeadlines() {
  std::vector<CoreState::Deadline> live;
  live.reserve(s_.attempts.size());
  for (auto& [id, a] : s_.attempts)
    if (a.deadline > 0) live.emplace_back(a.deadline, id);
  s_.attempt_deadlines = CoreState::DeadlineHeap(std::greater<>(), std::move(live));
}

void Lifecycle::EndAttempt(const Attempt& a, AttemptOutcome outcome, double run_s, Time now) {
  Job& job = s_.jobs.at(a.job);
  Task& task = job.tasks[a.task];
  PolicyEvent ended;
  ended.kind = PolicyEvent::Kind::kEnded;
  if (!s_.policies.empty()) s_.FillView(a, &ended.attempt);
  // Its start not delivered yet (reported with its end): only the end is.
  if (a.start_event > 0 && a.start_event <= s_.policy_events.size()) {
    PolicyEvent& start = s_.policy_events[a.start_event - 1];
    if (start.kind == PolicyEvent::Kind::kStarted && start.attempt.attempt == a.id)
      start.kind = PolicyEvent::Kind::kDropped;
  }
  // Unlink from the task's live list.
  if (task.live_head == a.id) {
    task.live_head = a.next;
  } else {
    for (AttemptId p = task.live_head; p != 0;) {
      Attempt& prev = s_.attempts.at(p);
      if (prev.next == a.id) {
        prev.next = a.next;
        break;
      }
      p = prev.next;
    }
  }
  if (task.live > 1) s_.extra_live--;
  task.live--;
  job.running--;
  if (job.owner) job.owner->slots -= a.slots;
  if (a.copy) s_.live_copies.erase(a.id);
  place_.AttemptEnded(a);
  ExecutorState* exec = s_.FindExec(a.executor);
  if (exec) {
    s_.ChangeSlots(*exec, [&] { exec->used_slots -= a.slots; });
    exec->used_gpus -= a.gpus;
    exec->used_memory_mb -= a.memory_mb;
    exec->attempts.Erase(a.id);
  }
  if (now < 0) now = s_.Now();
  const TaskDef& d = job.def.Task(a.task);
  AttemptRecord r;
  r.job = a.job;
  r.task = a.task;
  r.attempt = a.id;
  r.executor = a.executor;
  r.task_class = d.ClassName();
  r.input_size = d.input_size;
  r.queued = a.queued;
  r.started = a.started;
  r.finished = now;
  r.run_s = run_s > 0 ? run_s : (a.started >= 0 ? now - a.started : 0);
  r.outcome = outcome;
  r.copy = a.copy;
  if (outcome != AttemptOutcome::kCommitted) s_.counters.extra_machine_s += r.Duration();
  s_.predictors->Observe(s_.shares.ForPredictors(r));
  for (auto& [e, state] : s_.predictors->HealthTransitions()) {
    TC_LOG(Info) << "executor " << e << " health: " << NodeHealthName(state.state) << " (speed factor "
                 << state.speed_factor << ")";
    if (ExecutorState* x = s_.FindExec(e)) place_.RefreshAvoid(*x);
    s_.PostExecutor(e, ExecutorChange::kHealthChanged);
  }
  for (CoreObserver* o : s_.observers) o->OnAttemptEnded(r);
  if (exec) {  // what the executor just did may change a policy's advice about it
    place_.RefreshAvoid(*exec);
    place_.MarkFree(*exec);
  }
  ended.end = {outcome, now, r.run_s};
  s_.Post(std::move(ended));
  s_.attempts.erase(a.id);
}

void Lifecycle::DropAttempt(AttemptId id, AttemptOutcome outcome, double run_s, std::string why) {
  Attempt a = s_.attempts.at(id);
  EndAttempt(a, outcome, run_s);
  Job& job = s_.jobs.at(a.job);
  Task& task = job.tasks[a.task];
  if (!why.empty()) TC_LOG(Debug) << "attempt " << id << " dropped: " << why;
  if (job.state == JobState::kRunning && task.phase == TaskPhase::kActive && task.live == 0)
    place_.Requeue(job, a.task);
  s_.dirty = true;
}

void Lifecycle::EndLiveAttempts(Job& job, TaskIndex t, AttemptOutcome outcome) {
  while (AttemptId id = job.tasks[t].live_head) {
    Attempt a = s_.attempts.at(id);
    s_.Emit(CancelCmd{id, a.executor});
    ObserveUnfinished(job, a);
    EndAttempt(a, outcome, 0);
  }
}

void Lifecycle::ObserveUnfinished(const Job& job, const Attempt& a) {
  if (a.started < 0 || !s_.predictors) return;
  const TaskDef& d = job.def.Task(a.task);
  RunningAttempt ra;
  ra.attempt = a.id;
  ra.executor = a.executor;
  ra.task_class = d.ClassName();
  ra.input_size = d.input_size;
  ra.elapsed = s_.Now() - a.started;
  ra.progress = a.progress;
  s_.predictors->ObserveUnfinished(ra, s_.Now());
}

JobStatusInfo Lifecycle::FinishJob(Job& job, JobState state, std::string reason) {
  place_.Unpark(job);
  job.state = state;
  job.reason = std::move(reason);
  job.finished = s_.Now();
  for (TaskIndex t = 0; t < job.tasks.size(); ++t)
    if (job.tasks[t].live > 0) EndLiveAttempts(job, t, AttemptOutcome::kCancelled);
  job.retry.clear();
  if (job.owner) {  // its attempts ended above: the owner's slots are back
    job.owner->jobs--;
    s_.owner_book.MaybeForget(*job.owner);
    job.owner = nullptr;
  }
  s_.running_jobs.erase(job.id);
  s_.queued_tasks -= job.Count();
  PolicyEvent ended;  // after its attempts' ends, posted above
  ended.kind = PolicyEvent::Kind::kJobEnded;
  ended.job = job.id;
  ended.state = state;
  s_.Post(std::move(ended));
  switch (state) {
    case JobState::kSucceeded: s_.counters.jobs_succeeded++; break;
    case JobState::kFailed: s_.counters.jobs_failed++; break;
    case JobState::kCancelled: s_.counters.jobs_cancelled++; break;
    case JobState::kRunning: break;
  }
  // Free per-task state now; counters and outputs stay for status queries.
  std::vector<Task>().swap(job.tasks);
  std::vector<float>().swap(job.run_times);
  if (state == JobState::kSucceeded)
    TC_LOG(Debug) << "job " << job.id << " succeeded";
  else
    TC_LOG(Info) << "job " << job.id << " (" << job.def.name << ") " << JobStateName(state) << ": " << job.reason;
  JobStatusInfo info = MakeStatusInfo(job);
  NoteFinished(s_, job);
  s_.Emit(JobFinishedCmd{job.id, state, job.reason, info});
  for (CoreObserver* o : s_.observers) o->OnJobFinished(info);
  Retain(job.id);  // may evict `job` itself (job_retention = 0)
  return info;
}

void Lifecycle::Retain(JobId finished) {
  s_.finished_order.push_back(finished);
  while (s_.finished_order.size() > s_.opt.job_retention) {
    JobId old = s_.finished_order.front();
    s_.finished_order.pop_front();
    const Job* j = s_.FindJob(old);
    if (j && !MayEvict(s_, *j)) continue;  // children still take its outputs
    if (j) place_.ForgetJob(*j);
    s_.jobs.erase(old);
  }
}

}  // namespace tailcut::core
