#include "tailcut/scheduler/core.h"

// GCC 12 reports a false -Wmaybe-uninitialized when a std::vector of
// std::variant reallocates (GCC bug 105593 family); the values are set.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "tailcut/common/log.h"

namespace tailcut {

const char* JobStateName(JobState s) {
  switch (s) {
    case JobState::kRunning: return "running";
    case JobState::kSucceeded: return "succeeded";
    case JobState::kFailed: return "failed";
    case JobState::kCancelled: return "cancelled";
  }
  return "unknown";
}

Proposal Proposal::LaunchCopy(JobId j, TaskIndex t, std::string why, ExecutorId on) {
  Proposal p;
  p.kind = Kind::kLaunchCopy;
  p.job = j;
  p.task = t;
  p.executor = on;
  p.reason = std::move(why);
  return p;
}
Proposal Proposal::CloneAtLaunch(JobId j, uint32_t copies, std::string why) {
  Proposal p;
  p.kind = Kind::kCloneAtLaunch;
  p.job = j;
  p.copies = copies;
  p.reason = std::move(why);
  return p;
}
Proposal Proposal::CancelAttempt(AttemptId a, std::string why) {
  Proposal p;
  p.kind = Kind::kCancelAttempt;
  p.attempt = a;
  p.reason = std::move(why);
  return p;
}
Proposal Proposal::Quarantine(ExecutorId e, std::string why) {
  Proposal p;
  p.kind = Kind::kQuarantine;
  p.executor = e;
  p.reason = std::move(why);
  return p;
}
Proposal Proposal::Release(ExecutorId e, std::string why) {
  Proposal p;
  p.kind = Kind::kRelease;
  p.executor = e;
  p.reason = std::move(why);
  return p;
}

Status LoadCoreOptions(const Config& cfg, std::string_view prefix, CoreOptions* o) {
  std::string p = prefix.empty() ? "" : std::string(prefix) + ".";
  for (Status s : {cfg.Get(p + "lost_after_s", &o->lost_after_s), cfg.Get(p + "max_attempts", &o->max_attempts),
                   cfg.Get(p + "infeasible_grace_s", &o->infeasible_grace_s),
                   cfg.Get(p + "redundancy_budget", &o->redundancy_budget), cfg.Get(p + "min_copies", &o->min_copies),
                   cfg.Get(p + "policy_interval_s", &o->policy_interval_s), cfg.Get(p + "pipeline_s", &o->pipeline_s),
                   cfg.Get(p + "max_queue_per_slot", &o->max_queue_per_slot),
                   cfg.Get(p + "job_retention", &o->job_retention),
                   cfg.Get(p + "max_quarantined_share", &o->max_quarantined_share)}) {
    if (!s.ok()) return s;
  }
  if (o->max_attempts == 0) return Status::InvalidArgument(p + "max_attempts must be at least 1");
  if (o->redundancy_budget < 0) return Status::InvalidArgument(p + "redundancy_budget must be >= 0");
  if (o->policy_interval_s <= 0) return Status::InvalidArgument(p + "policy_interval_s must be > 0");
  return Status::Ok();
}

namespace {

enum class TaskPhase : uint8_t {
  kUnlaunched,  // never launched
  kActive,      // has live attempts
  kWaiting,     // in the job's retry queue
  kCommitted,
  kDead,        // failed for good, or the job ended first
};

struct Task {
  TaskPhase phase = TaskPhase::kUnlaunched;
  uint8_t live = 0;       // live attempts
  uint16_t failures = 0;
  AttemptId live_head = 0;  // first live attempt; the rest chain via Attempt::next
};

struct Attempt {
  AttemptId id = 0;
  JobId job = 0;
  TaskIndex task = 0;
  ExecutorId executor = 0;
  Time queued = 0;
  Time started = -1;
  float progress = -1;
  bool copy = false;
  uint32_t slots = 1;
  uint32_t gpus = 0;
  AttemptId next = 0;  // next live attempt of the same task
};

struct Job {
  JobId id = 0;
  JobDef def;
  JobState state = JobState::kRunning;
  std::string reason;
  std::string last_error;
  Time submitted = 0;
  Time finished = 0;
  std::vector<Task> tasks;
  TaskIndex next_unlaunched = 0;
  std::deque<TaskIndex> retry;
  uint32_t committed = 0, running = 0, attempts = 0, copies = 0, failed_attempts = 0, dead = 0;
  uint32_t needed = 0;
  uint32_t clone_copies = 0;
  std::vector<float> run_times;
  mutable double median_cache = 0;
  mutable size_t median_n = 0;
  double typical_run_s = -1;  // EWMA of committed run times
  Time infeasible_since = -1;
  std::string infeasible_why;
  uint64_t feasibility_epoch = 0;  // executors_epoch_ when last checked
  bool in_runnable = false;   // has an entry in Impl::runnable_
  bool pipelines = false;     // QueuePerSlot() > 0; kept by UpdatePipelining()
  std::vector<CommittedOutput> outputs;

  uint32_t Count() const { return def.TaskCount(); }
  bool HasWork() const { return !retry.empty() || next_unlaunched < Count(); }
};

struct Executor {
  ExecutorId id = 0;
  ExecutorDesc desc;
  std::unordered_set<std::string> kernels;
  uint32_t used_slots = 0;
  uint32_t used_gpus = 0;
  std::unordered_set<AttemptId> attempts;
  uint64_t finished = 0;
  bool quarantined = false;
  bool in_free = false;
  Time last_seen = 0;
};

bool LabelsMatch(const Executor& e, const TaskDef& d) {
  for (auto& [k, v] : d.labels) {
    bool found = false;
    for (auto& [ek, ev] : e.desc.labels) found |= (ek == k && ev == v);
    if (!found) return false;
  }
  return true;
}

// Could `e` ever run `d` (ignoring what it runs now)?
bool Feasible(const Executor& e, const TaskDef& d) {
  return std::max<uint32_t>(d.cpu_slots, 1) <= e.desc.slots && d.gpus <= e.desc.gpus &&
         (e.kernels.empty() || e.kernels.count(d.kernel)) && LabelsMatch(e, d);
}

}  // namespace

class SchedulerCore::Impl final : public ClusterView {
 public:
  Impl(CoreOptions o, const Clock* clock, PolicyChain policies, std::unique_ptr<PredictorSuite> predictors)
      : opt_(o),
        clock_(clock),
        policies_(std::move(policies)),
        predictors_(predictors ? std::move(predictors) : std::make_unique<PredictorSuite>()) {}

  // ------------------------------------------------------------ events --
  StatusOr<JobId> SubmitJob(JobDef def) {
    Status s = Validate(def);
    if (!s.ok()) return s;
    JobId id = next_job_id_++;
    Job& job = jobs_[id];
    job.id = id;
    job.def = std::move(def);
    job.submitted = Now();
    job.tasks.resize(job.Count());
    switch (job.def.rule.kind) {
      case CompletionKind::kAll: job.needed = job.Count(); break;
      case CompletionKind::kKOfN:
      case CompletionKind::kQuorum: job.needed = job.def.rule.k; break;
    }
    if (job.def.max_attempts == 0) job.def.max_attempts = opt_.max_attempts;
    running_jobs_.insert(id);
    MakeRunnable(job);
    std::vector<Proposal> proposals;
    for (auto& p : policies_) {
      proposals.clear();
      p->OnJobSubmitted(*this, id, &proposals);
      ApplyAll(proposals, p->name());
    }
    dirty_ = true;
    return id;
  }

  Status CancelJob(JobId id, std::string reason) {
    Job* job = FindJobPtr(id);
    if (!job) return Status::NotFound("no job " + std::to_string(id));
    if (job->state != JobState::kRunning)
      return Status::FailedPrecondition("job " + std::to_string(id) + " already " + JobStateName(job->state));
    FinishJob(*job, JobState::kCancelled, std::move(reason));
    return Status::Ok();
  }

  ExecutorId AddExecutor(ExecutorDesc desc) {
    ExecutorId id = next_executor_id_++;
    Executor& e = executors_[id];
    e.id = id;
    e.desc = std::move(desc);
    e.desc.slots = std::max<uint32_t>(e.desc.slots, 1);
    e.kernels.insert(e.desc.kernels.begin(), e.desc.kernels.end());
    e.last_seen = Now();
    total_slots_ += e.desc.slots;
    executors_epoch_++;
    MarkFree(e);
    // Jobs that waited for a fitting executor may run now.
    for (JobId j : running_jobs_) {
      Job& job = jobs_.at(j);
      if (job.HasWork()) MakeRunnable(job);
    }
    dirty_ = true;
    return id;
  }

  void RemoveExecutor(ExecutorId id, bool lost, std::string reason) {
    auto it = executors_.find(id);
    if (it == executors_.end()) return;
    std::vector<AttemptId> ids(it->second.attempts.begin(), it->second.attempts.end());
    std::sort(ids.begin(), ids.end());  // deterministic requeue order
    for (AttemptId a : ids) DropAttempt(a, AttemptOutcome::kExecutorLost, 0, "");
    total_slots_ -= it->second.desc.slots;
    executors_epoch_++;
    predictors_->ForgetExecutor(id);
    if (lost) {
      TC_LOG(Warn) << "executor " << id << " (" << it->second.desc.name << ") lost: " << reason << "; "
                   << ids.size() << " attempts rescheduled";
      commands_.push_back(ExecutorChangedCmd{id, ExecutorChangedCmd::Change::kLost, reason});
    }
    executors_.erase(it);
    dirty_ = true;
  }

  void ExecutorSeen(ExecutorId id) {
    if (Executor* e = FindExec(id)) e->last_seen = Now();
  }

  void AttemptStarted(AttemptId id) {
    auto it = attempts_.find(id);
    if (it != attempts_.end() && it->second.started < 0) it->second.started = Now();
  }

  void AttemptProgress(AttemptId id, float fraction) {
    auto it = attempts_.find(id);
    if (it != attempts_.end()) it->second.progress = std::clamp(fraction, 0.0f, 1.0f);
  }

  void AttemptSucceeded(AttemptId id, std::string output, double run_s) {
    auto it = attempts_.find(id);
    if (it == attempts_.end()) return;  // late result of an attempt already ended
    Attempt a = it->second;
    Job& job = jobs_.at(a.job);
    Task& task = job.tasks[a.task];
    if (job.state != JobState::kRunning || task.phase == TaskPhase::kCommitted) {
      EndAttempt(a, AttemptOutcome::kSuperseded, run_s);
      return;
    }
    EndAttempt(a, AttemptOutcome::kCommitted, run_s);
    if (Executor* e = FindExec(a.executor)) e->finished++;
    task.phase = TaskPhase::kCommitted;
    job.committed++;
    job.run_times.push_back(static_cast<float>(run_s));
    job.typical_run_s = job.typical_run_s < 0 ? run_s : 0.9 * job.typical_run_s + 0.1 * run_s;
    UpdatePipelining(job);
    EndLiveAttempts(job, a.task, AttemptOutcome::kSuperseded);
    if (job.def.return_outputs) job.outputs.push_back({a.task, a.id, a.executor, run_s, output});
    if (job.def.stream_results)
      commands_.push_back(TaskCommittedCmd{job.id, a.task, a.id, a.executor, run_s, std::move(output)});
    if (job.committed >= job.needed) FinishJob(job, JobState::kSucceeded, "");
    dirty_ = true;
  }

  void AttemptFailed(AttemptId id, std::string error, double run_s) {
    auto it = attempts_.find(id);
    if (it == attempts_.end()) return;
    Attempt a = it->second;
    EndAttempt(a, AttemptOutcome::kFailed, run_s);
    Job& job = jobs_.at(a.job);
    job.failed_attempts++;
    job.last_error = error;
    Task& task = job.tasks[a.task];
    task.failures++;
    if (job.state != JobState::kRunning || task.phase == TaskPhase::kCommitted || task.live > 0) return;
    if (task.failures >= job.def.max_attempts) {
      task.phase = TaskPhase::kDead;
      job.dead++;
      if (!CanStillComplete(job)) {
        FinishJob(job, JobState::kFailed,
                  "task " + std::to_string(a.task) + " failed " + std::to_string(task.failures) +
                      " times; last error: " + error);
      } else if (job.committed + job.dead == job.Count()) {  // a quorum with nothing left to wait for
        FinishJob(job, JobState::kSucceeded,
                  "quorum closed: " + std::to_string(job.committed) + " of " + std::to_string(job.Count()) +
                      " reported, the rest failed");
      }
    } else {
      Requeue(job, a.task);
    }
    dirty_ = true;
  }

  void AttemptDropped(AttemptId id, std::string why) {
    if (attempts_.count(id)) DropAttempt(id, AttemptOutcome::kExecutorLost, 0, std::move(why));
  }

  void Tick() {
    Time now = Now();
    if (opt_.lost_after_s > 0) {
      std::vector<ExecutorId> lost;
      for (auto& [id, e] : executors_)
        if (now - e.last_seen > opt_.lost_after_s) lost.push_back(id);
      for (ExecutorId id : lost) RemoveExecutor(id, true, "no heartbeat for " + std::to_string(opt_.lost_after_s) + " s");
    }
    std::vector<JobId> check(running_jobs_.begin(), running_jobs_.end());
    for (JobId id : check) {
      Job& job = jobs_.at(id);
      const CompletionRule& r = job.def.rule;
      if (r.kind == CompletionKind::kQuorum && r.deadline_s > 0 && now >= job.submitted + r.deadline_s) {
        std::string summary = std::to_string(job.committed) + " of " + std::to_string(job.Count()) + " reported";
        if (job.committed >= std::max<uint32_t>(r.min_count, 1))
          FinishJob(job, JobState::kSucceeded, "quorum closed at deadline: " + summary);
        else
          FinishJob(job, JobState::kFailed, "deadline passed with " + summary + ", fewer than min_count " +
                                                std::to_string(r.min_count));
        continue;
      }
      if (!job.def.wait_for_resources && job.infeasible_since >= 0 &&
          now - job.infeasible_since >= opt_.infeasible_grace_s) {
        FinishJob(job, JobState::kFailed, job.infeasible_why);
      }
    }
    if (!policies_.empty() && now >= next_policy_time_) {
      next_policy_time_ = now + opt_.policy_interval_s;
      std::vector<Proposal> proposals;
      for (auto& p : policies_) {
        proposals.clear();
        p->OnTick(*this, &proposals);
        ApplyAll(proposals, p->name());
      }
    }
    dirty_ = true;
  }

  void TakeCommands(std::vector<Command>* out) {
    if (dirty_) Pump();
    dirty_ = false;
    if (out->empty()) {
      out->swap(commands_);
    } else {
      std::move(commands_.begin(), commands_.end(), std::back_inserter(*out));
      commands_.clear();
    }
  }

  // ----------------------------------------------------------- queries --
  StatusOr<JobStatusInfo> Status_(JobId id) const {
    const Job* job = FindJobPtr(id);
    if (!job) return Status::NotFound("no job " + std::to_string(id) + " (unknown or expired)");
    JobStatusInfo s;
    s.id = id;
    s.name = job->def.name;
    s.state = job->state;
    s.tasks = job->Count();
    s.committed = job->committed;
    s.running = job->running;
    s.attempts = job->attempts;
    s.copies = job->copies;
    s.failed_attempts = job->failed_attempts;
    s.reason = job->reason;
    s.submitted = job->submitted;
    s.finished = job->finished;
    return s;
  }

  StatusOr<std::vector<CommittedOutput>> Outputs(JobId id) const {
    const Job* job = FindJobPtr(id);
    if (!job) return Status::NotFound("no job " + std::to_string(id) + " (unknown or expired)");
    if (!job->def.return_outputs)
      return Status::FailedPrecondition("job " + std::to_string(id) + " was submitted without return_outputs");
    return job->outputs;
  }

  std::vector<ExecutorStatusInfo> ExecutorList() const {
    std::vector<ExecutorStatusInfo> out;
    for (auto& [id, e] : executors_) {
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
      i.health = predictors_->Health(id);
      out.push_back(std::move(i));
    }
    return out;
  }

  const TaskDef* TaskOf(JobId j, TaskIndex t) const {
    const Job* job = FindJobPtr(j);
    return job && t < job->Count() ? &job->def.Task(t) : nullptr;
  }
  bool HasExecutor(ExecutorId e) const { return executors_.count(e) > 0; }
  ExecutorId ExecutorOfAttempt(AttemptId a) const {
    auto it = attempts_.find(a);
    return it == attempts_.end() ? 0 : it->second.executor;
  }
  size_t LiveAttempts() const { return attempts_.size(); }
  size_t RunningJobs() const { return running_jobs_.size(); }
  std::vector<JobId> RunningJobIds() const { return {running_jobs_.begin(), running_jobs_.end()}; }
  void AddObserver(CoreObserver* o) { observers_.push_back(o); }
  const CoreOptions& options() const { return opt_; }

  // ------------------------------------------------------ ClusterView --
  Time Now() const override { return clock_->Now(); }
  void ForEachJob(const std::function<void(const JobView&)>& fn) const override {
    for (JobId id : running_jobs_) fn(MakeJobView(jobs_.at(id)));
  }
  void ForEachRunningAttempt(const std::function<void(const AttemptView&)>& fn) const override {
    for (auto& [id, a] : attempts_) {
      AttemptView v;
      v.attempt = id;
      v.job = a.job;
      v.task = a.task;
      v.executor = a.executor;
      v.queued = a.queued;
      v.started = a.started;
      v.progress = a.progress;
      v.copy = a.copy;
      v.task_live = jobs_.at(a.job).tasks[a.task].live;
      fn(v);
    }
  }
  void ForEachExecutor(const std::function<void(const ExecutorView&)>& fn) const override {
    for (auto& [id, e] : executors_) fn(MakeExecView(e));
  }
  bool FindJob(JobId id, JobView* out) const override {
    const Job* job = FindJobPtr(id);
    if (!job) return false;
    *out = MakeJobView(*job);
    return true;
  }
  bool FindExecutor(ExecutorId id, ExecutorView* out) const override {
    auto it = executors_.find(id);
    if (it == executors_.end()) return false;
    *out = MakeExecView(it->second);
    return true;
  }
  const std::vector<float>& CommittedRunTimes(JobId id) const override {
    static const std::vector<float> kEmpty;
    const Job* job = FindJobPtr(id);
    return job ? job->run_times : kEmpty;
  }
  double MedianRunTime(JobId id) const override {
    const Job* job = FindJobPtr(id);
    if (!job || job->run_times.empty()) return 0;
    if (job->median_n != job->run_times.size()) {
      std::vector<float> v = job->run_times;
      auto mid = v.begin() + static_cast<long>(v.size() / 2);
      std::nth_element(v.begin(), mid, v.end());
      job->median_cache = *mid;
      job->median_n = job->run_times.size();
    }
    return job->median_cache;
  }
  uint32_t CopiesAllowed() const override {
    auto cap = std::max<uint32_t>(opt_.min_copies,
                                  static_cast<uint32_t>(std::floor(opt_.redundancy_budget * total_slots_)));
    return extra_live_ >= cap ? 0 : cap - extra_live_;
  }
  uint32_t TotalSlots() const override { return total_slots_; }
  const PredictorSuite* Predictors() const override { return predictors_.get(); }

 private:
  // ---------------------------------------------------------- helpers --
  Job* FindJobPtr(JobId id) {
    auto it = jobs_.find(id);
    return it == jobs_.end() ? nullptr : &it->second;
  }
  const Job* FindJobPtr(JobId id) const {
    auto it = jobs_.find(id);
    return it == jobs_.end() ? nullptr : &it->second;
  }
  Executor* FindExec(ExecutorId id) {
    auto it = executors_.find(id);
    return it == executors_.end() ? nullptr : &it->second;
  }

  JobView MakeJobView(const Job& j) const {
    JobView v;
    v.id = j.id;
    v.def = &j.def;
    v.submitted = j.submitted;
    v.tasks = j.Count();
    v.committed = j.committed;
    v.unlaunched = j.Count() - j.next_unlaunched;
    v.running = j.running;
    v.copies = j.copies;
    v.needed = j.needed;
    return v;
  }
  ExecutorView MakeExecView(const Executor& e) const {
    ExecutorView v;
    v.id = e.id;
    v.name = e.desc.name;
    v.slots = e.desc.slots;
    v.gpus = e.desc.gpus;
    v.used_slots = e.used_slots;
    v.running = static_cast<uint32_t>(e.attempts.size());
    v.finished = e.finished;
    v.quarantined = e.quarantined;
    return v;
  }

  Status Validate(const JobDef& def) const {
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
    // Check each distinct task shape once against the registered executors.
    std::set<std::string> seen;
    auto check = [&](const TaskDef& d) -> Status {
      if (d.kernel.empty()) return Status::InvalidArgument("a task has no kernel");
      if (d.gpus > 1) return Status::InvalidArgument("a task may ask for at most 1 gpu");
      if (def.wait_for_resources || executors_.empty()) return Status::Ok();
      std::string key = d.kernel + '\0' + std::to_string(d.cpu_slots) + '\0' + std::to_string(d.gpus);
      for (auto& [k, v] : d.labels) key += '\0' + k + '=' + v;
      if (!seen.insert(key).second) return Status::Ok();
      return CheckFeasible(d);
    };
    for (const TaskDef& d : def.tasks)
      if (Status s = check(d); !s.ok()) return s;
    if (def.template_count > 0)
      if (Status s = check(def.templ); !s.ok()) return s;
    return Status::Ok();
  }

  // Ok if some registered executor could run `d`; else says why not.
  Status CheckFeasible(const TaskDef& d) const {
    if (executors_.empty()) return Status::FailedPrecondition("no executor has registered with the scheduler");
    bool kernel_offered = false;
    for (auto& [id, e] : executors_) {
      if (Feasible(e, d)) return Status::Ok();
      kernel_offered |= e.kernels.empty() || e.kernels.count(d.kernel) > 0;
    }
    if (!kernel_offered) {
      std::set<std::string> offered;
      for (auto& [id, e] : executors_) offered.insert(e.kernels.begin(), e.kernels.end());
      std::string list;
      for (auto& k : offered) list += (list.empty() ? "" : ", ") + k;
      return Status::NotFound("no executor offers kernel '" + d.kernel + "' (offered: " + list + ")");
    }
    std::string need = std::to_string(std::max<uint32_t>(d.cpu_slots, 1)) + " cpu slot(s), " +
                       std::to_string(d.gpus) + " gpu(s)";
    for (auto& [k, v] : d.labels) need += ", label " + k + "=" + v;
    return Status::FailedPrecondition("no executor can run a '" + d.kernel + "' task needing " + need + " (" +
                                      std::to_string(executors_.size()) + " executors registered)");
  }

  bool CanStillComplete(const Job& job) const {
    switch (job.def.rule.kind) {
      case CompletionKind::kAll: return job.dead == 0;
      case CompletionKind::kKOfN: return job.Count() - job.dead >= job.def.rule.k;
      case CompletionKind::kQuorum:
        return job.Count() - job.dead >= std::max<uint32_t>(job.def.rule.min_count, 1);
    }
    return false;
  }

  void MakeRunnable(Job& job) {
    if (job.in_runnable || job.state != JobState::kRunning) return;
    job.in_runnable = true;
    PushRunnable(job);
    dirty_ = true;
  }

  void Requeue(Job& job, TaskIndex t) {
    job.tasks[t].phase = TaskPhase::kWaiting;
    job.retry.push_back(t);
    MakeRunnable(job);
  }

  bool HasFreeSlot(const Executor& e) const { return e.used_slots < e.desc.slots; }

  void MarkFree(Executor& e) {
    if (!e.in_free && !e.quarantined && HasFreeSlot(e)) {
      e.in_free = true;
      free_.push_back(e.id);
    }
  }

  bool RunsTask(const Job& job, TaskIndex t, ExecutorId e) const {
    for (AttemptId a = job.tasks[t].live_head; a != 0;) {
      const Attempt& at = attempts_.at(a);
      if (at.executor == e) return true;
      a = at.next;
    }
    return false;
  }

  bool PolicyAvoids(ExecutorId e) const {
    for (auto& p : policies_)
      if (p->AvoidExecutor(*this, e)) return true;
    return false;
  }

  // An executor with a free slot for this task, or 0. Copies never go where
  // the task already runs, nor to executors a policy advises against.
  ExecutorId PickFree(const Job& job, TaskIndex t, bool copy, ExecutorId preferred = 0) {
    const TaskDef& d = job.def.Task(t);
    uint32_t need = std::max<uint32_t>(d.cpu_slots, 1);
    auto fits = [&](const Executor& e) {
      return !e.quarantined && e.used_slots + need <= e.desc.slots && e.used_gpus + d.gpus <= e.desc.gpus &&
             Feasible(e, d) && !(copy && RunsTask(job, t, e.id));
    };
    if (preferred) {
      if (Executor* e = FindExec(preferred); e && fits(*e)) return preferred;
    }
    while (!free_.empty()) {  // drop stale entries at the front
      Executor* e = FindExec(free_.front());
      if (e && !e->quarantined && HasFreeSlot(*e)) break;
      if (e) e->in_free = false;
      free_.pop_front();
    }
    ExecutorId fallback = 0;
    for (ExecutorId id : free_) {
      Executor* e = FindExec(id);
      if (!e || !fits(*e)) continue;
      if (PolicyAvoids(id)) {
        if (!fallback) fallback = id;
        continue;
      }
      return id;
    }
    return copy ? 0 : fallback;
  }

  // Pipelining for tiny tasks: queued attempts allowed per slot.
  uint32_t QueuePerSlot(const Job& job) const {
    // One lucky fast task must not turn a job into a pipelined one.
    constexpr uint32_t kMinSamples = 4;
    if (job.typical_run_s < 0 || job.committed < kMinSamples) return 0;
    if (job.typical_run_s <= opt_.pipeline_s / opt_.max_queue_per_slot) return opt_.max_queue_per_slot;
    return static_cast<uint32_t>(opt_.pipeline_s / job.typical_run_s);
  }

  // runnable_pipelining_ counts runnable_ entries whose job has `pipelines`;
  // these keep it exact as entries come and go and as the flag changes.
  void PushRunnable(Job& job) {
    runnable_.push_back(job.id);
    if (job.pipelines) runnable_pipelining_++;
  }
  void UpdatePipelining(Job& job) {
    bool p = QueuePerSlot(job) > 0;
    if (p == job.pipelines) return;
    job.pipelines = p;
    if (job.in_runnable) p ? runnable_pipelining_++ : runnable_pipelining_--;
  }

  // An executor that may queue this task behind its running work, or 0.
  ExecutorId PickQueue(const Job& job, TaskIndex t, uint32_t per_slot) {
    const TaskDef& d = job.def.Task(t);
    uint32_t need = std::max<uint32_t>(d.cpu_slots, 1);
    if (executors_.empty()) return 0;
    auto it = executors_.upper_bound(rr_cursor_);
    for (size_t i = 0; i < executors_.size(); ++i, ++it) {
      if (it == executors_.end()) it = executors_.begin();
      Executor& e = it->second;
      uint64_t limit = static_cast<uint64_t>(e.desc.slots) * (1 + per_slot);
      if (e.desc.max_queued) limit = std::min<uint64_t>(limit, uint64_t{e.desc.slots} + e.desc.max_queued);
      if (!e.quarantined && e.used_slots + need <= limit && e.used_gpus + d.gpus <= e.desc.gpus && Feasible(e, d) &&
          !PolicyAvoids(e.id)) {
        rr_cursor_ = e.id;
        return e.id;
      }
    }
    return 0;
  }

  void Launch(Job& job, TaskIndex t, ExecutorId eid, bool copy) {
    Executor& e = executors_.at(eid);
    const TaskDef& d = job.def.Task(t);
    Task& task = job.tasks[t];
    Attempt a;
    a.id = next_attempt_id_++;
    a.job = job.id;
    a.task = t;
    a.executor = eid;
    a.queued = Now();
    a.copy = copy;
    a.slots = std::max<uint32_t>(d.cpu_slots, 1);
    a.gpus = d.gpus;
    a.next = task.live_head;
    task.live_head = a.id;
    if (task.live > 0) extra_live_++;
    task.live++;
    task.phase = TaskPhase::kActive;
    e.used_slots += a.slots;
    e.used_gpus += a.gpus;
    e.attempts.insert(a.id);
    job.running++;
    job.attempts++;
    if (copy) job.copies++;
    attempts_.emplace(a.id, a);
    commands_.push_back(LaunchCmd{a.id, eid, job.id, t, copy});
  }

  // Removes a live attempt and records how it ended.
  void EndAttempt(const Attempt& a, AttemptOutcome outcome, double run_s) {
    Job& job = jobs_.at(a.job);
    Task& task = job.tasks[a.task];
    // Unlink from the task's live list.
    if (task.live_head == a.id) {
      task.live_head = a.next;
    } else {
      for (AttemptId p = task.live_head; p != 0;) {
        Attempt& prev = attempts_.at(p);
        if (prev.next == a.id) {
          prev.next = a.next;
          break;
        }
        p = prev.next;
      }
    }
    if (task.live > 1) extra_live_--;
    task.live--;
    job.running--;
    if (Executor* e = FindExec(a.executor)) {
      e->used_slots -= a.slots;
      e->used_gpus -= a.gpus;
      e->attempts.erase(a.id);
      MarkFree(*e);
    }
    Time now = Now();
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
    predictors_->Observe(r);
    for (auto& [e, state] : predictors_->HealthTransitions())
      TC_LOG(Info) << "executor " << e << " health: " << NodeHealthName(state.state) << " (speed factor "
                   << state.speed_factor << ")";
    for (CoreObserver* o : observers_) o->OnAttemptEnded(r);
    attempts_.erase(a.id);
  }

  // Ends attempt `id` without a result; requeues its task if nothing else runs it.
  void DropAttempt(AttemptId id, AttemptOutcome outcome, double run_s, std::string why) {
    Attempt a = attempts_.at(id);
    EndAttempt(a, outcome, run_s);
    Job& job = jobs_.at(a.job);
    Task& task = job.tasks[a.task];
    if (!why.empty()) TC_LOG(Debug) << "attempt " << id << " dropped: " << why;
    if (job.state == JobState::kRunning && task.phase == TaskPhase::kActive && task.live == 0) Requeue(job, a.task);
    dirty_ = true;
  }

  // Cancels every live attempt of a task (the executor is told).
  void EndLiveAttempts(Job& job, TaskIndex t, AttemptOutcome outcome) {
    while (AttemptId id = job.tasks[t].live_head) {
      Attempt a = attempts_.at(id);
      commands_.push_back(CancelCmd{id, a.executor});
      EndAttempt(a, outcome, 0);
    }
  }

  void FinishJob(Job& job, JobState state, std::string reason) {
    job.state = state;
    job.reason = std::move(reason);
    job.finished = Now();
    for (TaskIndex t = 0; t < job.tasks.size(); ++t)
      if (job.tasks[t].live > 0) EndLiveAttempts(job, t, AttemptOutcome::kCancelled);
    job.retry.clear();
    running_jobs_.erase(job.id);
    // Free per-task state now; counters and outputs stay for status queries.
    std::vector<Task>().swap(job.tasks);
    std::vector<float>().swap(job.run_times);
    if (state == JobState::kSucceeded)
      TC_LOG(Debug) << "job " << job.id << " succeeded";
    else
      TC_LOG(Info) << "job " << job.id << " (" << job.def.name << ") " << JobStateName(state) << ": " << job.reason;
    commands_.push_back(JobFinishedCmd{job.id, state, job.reason});
    if (!observers_.empty()) {
      JobStatusInfo info = *Status_(job.id);
      for (CoreObserver* o : observers_) o->OnJobFinished(info);
    }
    finished_order_.push_back(job.id);
    while (finished_order_.size() > opt_.job_retention) {
      JobId old = finished_order_.front();
      finished_order_.pop_front();
      if (const Job* j = FindJobPtr(old); j && j->in_runnable && j->pipelines) runnable_pipelining_--;
      jobs_.erase(old);
    }
  }

  // Places queued tasks on executors, round-robin over runnable jobs.
  void Pump() {
    constexpr uint32_t kQuantum = 64;  // tasks per job per round: small jobs are not starved
    size_t rounds_without_progress = 0;
    // Some job in runnable_ may queue beyond slots. Performance: this was a
    // scan of runnable_ on every Pump, i.e. O(runnable jobs) after every
    // event; with a backlog (10,000 executors, ~2,000 queued jobs in the
    // simulator) it took 86% of the run time. The counter gives the same
    // answer in O(1) (same entries counted, finished-but-queued ones too).
    bool pipelining_possible = runnable_pipelining_ > 0;
    while (!runnable_.empty() && rounds_without_progress < runnable_.size()) {
      JobId id = runnable_.front();
      runnable_.pop_front();
      Job* job = FindJobPtr(id);
      if (job && job->pipelines) runnable_pipelining_--;
      if (!job || job->state != JobState::kRunning) {
        if (job) job->in_runnable = false;  // a finished job's last entry is gone
        continue;
      }
      uint32_t placed = 0;
      bool blocked = false;
      while (placed < kQuantum && job->HasWork()) {
        bool from_retry = !job->retry.empty();
        TaskIndex t = from_retry ? job->retry.front() : job->next_unlaunched;
        TaskPhase phase = job->tasks[t].phase;
        if (phase != (from_retry ? TaskPhase::kWaiting : TaskPhase::kUnlaunched)) {  // stale entry
          from_retry ? job->retry.pop_front() : void(job->next_unlaunched++);
          continue;
        }
        ExecutorId e = PickFree(*job, t, false);
        if (!e) {
          uint32_t q = QueuePerSlot(*job);
          if (q > 0) e = PickQueue(*job, t, q);
        }
        if (!e) {
          // Feasibility only changes when executors come or go.
          if (job->feasibility_epoch != executors_epoch_) {
            job->feasibility_epoch = executors_epoch_;
            Status s = CheckFeasible(job->def.Task(t));
            if (!s.ok() && job->infeasible_since < 0) {
              job->infeasible_since = Now();
              job->infeasible_why = s.message();
              TC_LOG(Warn) << "job " << id << " waits: " << s.message();
            } else if (s.ok()) {
              job->infeasible_since = -1;
            }
          }
          blocked = true;
          break;
        }
        from_retry ? job->retry.pop_front() : void(job->next_unlaunched++);
        Launch(*job, t, e, false);
        job->infeasible_since = -1;
        ++placed;
        for (uint32_t c = 0; !from_retry && c < job->clone_copies && CopiesAllowed() > 0; ++c) {
          ExecutorId ce = PickFree(*job, t, true);
          if (!ce) break;
          Launch(*job, t, ce, true);
        }
      }
      if (job->HasWork()) {
        PushRunnable(*job);
      } else {
        job->in_runnable = false;
      }
      rounds_without_progress = (placed == 0 && blocked) ? rounds_without_progress + 1 : 0;
      if (blocked && free_.empty() && !pipelining_possible) break;  // no slot anywhere
    }
  }

  void ApplyAll(const std::vector<Proposal>& proposals, std::string_view policy) {
    for (const Proposal& p : proposals) Apply(p, policy);
  }

  void Apply(const Proposal& p, std::string_view policy) {
    switch (p.kind) {
      case Proposal::Kind::kLaunchCopy: {
        Job* job = FindJobPtr(p.job);
        if (!job || job->state != JobState::kRunning || p.task >= job->Count()) return;
        Task& task = job->tasks[p.task];
        if (task.phase != TaskPhase::kActive || task.live == 0 || CopiesAllowed() == 0) return;
        ExecutorId e = PickFree(*job, p.task, true, p.executor);
        if (!e) return;
        TC_LOG(Debug) << policy << ": copy of job " << p.job << " task " << p.task << " on executor " << e << ": "
                      << p.reason;
        Launch(*job, p.task, e, true);
        return;
      }
      case Proposal::Kind::kCloneAtLaunch: {
        if (Job* job = FindJobPtr(p.job)) job->clone_copies = std::min<uint32_t>(p.copies, 8);
        return;
      }
      case Proposal::Kind::kCancelAttempt: {
        auto it = attempts_.find(p.attempt);
        if (it == attempts_.end()) return;
        commands_.push_back(CancelCmd{p.attempt, it->second.executor});
        DropAttempt(p.attempt, AttemptOutcome::kCancelled, 0, std::string(policy) + ": " + p.reason);
        return;
      }
      case Proposal::Kind::kQuarantine: {
        Executor* e = FindExec(p.executor);
        if (!e || e->quarantined) return;
        size_t quarantined = 0;
        for (auto& [id, x] : executors_) quarantined += x.quarantined;
        size_t cap = static_cast<size_t>(opt_.max_quarantined_share * executors_.size());
        if (executors_.size() >= 3) cap = std::max<size_t>(cap, 1);
        cap = std::min(cap, executors_.size() / 2);  // never more than half the fleet
        if (quarantined + 1 > cap) return;
        e->quarantined = true;
        TC_LOG(Info) << policy << ": quarantine executor " << e->id << " (" << e->desc.name << "): " << p.reason;
        commands_.push_back(ExecutorChangedCmd{e->id, ExecutorChangedCmd::Change::kQuarantined, p.reason});
        return;
      }
      case Proposal::Kind::kRelease: {
        Executor* e = FindExec(p.executor);
        if (!e || !e->quarantined) return;
        e->quarantined = false;
        MarkFree(*e);
        TC_LOG(Info) << policy << ": release executor " << e->id << " (" << e->desc.name << "): " << p.reason;
        commands_.push_back(ExecutorChangedCmd{e->id, ExecutorChangedCmd::Change::kReleased, p.reason});
        dirty_ = true;
        return;
      }
    }
  }

  CoreOptions opt_;
  const Clock* clock_;
  PolicyChain policies_;
  std::unique_ptr<PredictorSuite> predictors_;
  std::vector<CoreObserver*> observers_;

  std::unordered_map<JobId, Job> jobs_;
  std::set<JobId> running_jobs_;
  std::deque<JobId> finished_order_;
  std::deque<JobId> runnable_;
  std::map<ExecutorId, Executor> executors_;
  std::deque<ExecutorId> free_;
  std::unordered_map<AttemptId, Attempt> attempts_;
  std::vector<Command> commands_;

  JobId next_job_id_ = 1;
  AttemptId next_attempt_id_ = 1;
  ExecutorId next_executor_id_ = 1;
  ExecutorId rr_cursor_ = 0;
  uint32_t total_slots_ = 0;
  uint32_t extra_live_ = 0;  // live attempts beyond the first of each task
  size_t runnable_pipelining_ = 0;  // runnable_ entries of jobs with `pipelines`
  uint64_t executors_epoch_ = 1;  // bumps when executors join or leave
  Time next_policy_time_ = 0;
  bool dirty_ = false;
};

SchedulerCore::SchedulerCore(CoreOptions options, const Clock* clock, PolicyChain policies,
                             std::unique_ptr<PredictorSuite> predictors)
    : impl_(std::make_unique<Impl>(options, clock, std::move(policies), std::move(predictors))) {}
SchedulerCore::~SchedulerCore() = default;

StatusOr<JobId> SchedulerCore::SubmitJob(JobDef job) { return impl_->SubmitJob(std::move(job)); }
Status SchedulerCore::CancelJob(JobId job, std::string reason) { return impl_->CancelJob(job, std::move(reason)); }
ExecutorId SchedulerCore::AddExecutor(ExecutorDesc desc) { return impl_->AddExecutor(std::move(desc)); }
void SchedulerCore::RemoveExecutor(ExecutorId e, bool lost, std::string reason) {
  impl_->RemoveExecutor(e, lost, std::move(reason));
}
void SchedulerCore::ExecutorSeen(ExecutorId e) { impl_->ExecutorSeen(e); }
void SchedulerCore::AttemptStarted(AttemptId a) { impl_->AttemptStarted(a); }
void SchedulerCore::AttemptProgress(AttemptId a, float f) { impl_->AttemptProgress(a, f); }
void SchedulerCore::AttemptSucceeded(AttemptId a, std::string output, double run_s) {
  impl_->AttemptSucceeded(a, std::move(output), run_s);
}
void SchedulerCore::AttemptFailed(AttemptId a, std::string error, double run_s) {
  impl_->AttemptFailed(a, std::move(error), run_s);
}
void SchedulerCore::AttemptDropped(AttemptId a, std::string why) { impl_->AttemptDropped(a, std::move(why)); }
void SchedulerCore::Tick() { impl_->Tick(); }
void SchedulerCore::TakeCommands(std::vector<Command>* out) { impl_->TakeCommands(out); }
StatusOr<JobStatusInfo> SchedulerCore::JobStatus(JobId job) const { return impl_->Status_(job); }
StatusOr<std::vector<CommittedOutput>> SchedulerCore::JobOutputs(JobId job) const { return impl_->Outputs(job); }
std::vector<ExecutorStatusInfo> SchedulerCore::Executors() const { return impl_->ExecutorList(); }
const TaskDef* SchedulerCore::TaskOf(JobId job, TaskIndex task) const { return impl_->TaskOf(job, task); }
bool SchedulerCore::HasExecutor(ExecutorId e) const { return impl_->HasExecutor(e); }
ExecutorId SchedulerCore::ExecutorOfAttempt(AttemptId a) const { return impl_->ExecutorOfAttempt(a); }
size_t SchedulerCore::LiveAttempts() const { return impl_->LiveAttempts(); }
size_t SchedulerCore::RunningJobs() const { return impl_->RunningJobs(); }
std::vector<JobId> SchedulerCore::RunningJobIds() const { return impl_->RunningJobIds(); }
const PredictorSuite* SchedulerCore::Predictors() const { return impl_->Predictors(); }
void SchedulerCore::AddObserver(CoreObserver* observer) { impl_->AddObserver(observer); }
const CoreOptions& SchedulerCore::options() const { return impl_->options(); }

}  // namespace tailcut
