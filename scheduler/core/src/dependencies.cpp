#include "dependencies.h"

#include <algorithm>

#include "core_state.h"
#include "lifecycle.h"
#include "placement.h"
#include "tailcut/common/log.h"

namespace tailcut::core {
namespace {

std::string JobName(JobId id) { return "job " + std::to_string(id); }

// The jobs whose outputs `def`'s tasks take, each once, in first-use order.
std::vector<JobId> InputJobs(const JobDef& def) {
  std::vector<JobId> out;
  auto add = [&](const TaskDef& t) {
    for (const TaskRef& r : t.inputs)
      if (std::find(out.begin(), out.end(), r.job) == out.end()) out.push_back(r.job);
  };
  for (const TaskDef& t : def.tasks) add(t);
  if (def.template_count > 0) add(def.templ);
  return out;
}

// `after` with the inputs' jobs added, each once (the journaled spec has
// only what the client sent).
void MergeInputJobs(JobDef& def) {
  std::vector<JobId> after;
  for (JobId p : def.after)
    if (std::find(after.begin(), after.end(), p) == after.end()) after.push_back(p);
  for (JobId p : InputJobs(def))
    if (std::find(after.begin(), after.end(), p) == after.end()) after.push_back(p);
  def.after = std::move(after);
}

bool KeepsOutputs(const JobDef& d) { return d.return_outputs || !d.output_dir.empty(); }

// Position in parent.outputs of each task's committed output (-1: none).
const std::vector<int32_t>& OutputIndex(DependencyBook& b, const Job& parent) {
  auto [it, fresh] = b.output_index.try_emplace(parent.id);
  if (fresh) {
    it->second.assign(parent.Count(), -1);
    for (size_t i = 0; i < parent.outputs.size(); ++i)
      if (parent.outputs[i].task < parent.Count()) it->second[parent.outputs[i].task] = static_cast<int32_t>(i);
  }
  return it->second;
}

// Calls visit(parent, task, output or null) for each input of `t`, in order.
// Needs each input's job finished and retained; `structural` only checks
// what a running parent allows (task range, kept outputs).
template <typename Visit>
Status ForEachInput(CoreState& s, const TaskDef& t, bool structural, Visit visit) {
  size_t n = 0;
  for (const TaskRef& r : t.inputs) {
    const Job* p = s.FindJob(r.job);
    if (!p) return Status::InvalidArgument("input " + JobName(r.job) + " is no longer held (core.job_retention)");
    if (!KeepsOutputs(p->def))
      return Status::InvalidArgument("input " + JobName(r.job) +
                                     " keeps no outputs: submit it with return_outputs (or output_dir)");
    if (!r.all && r.task >= p->Count())
      return Status::InvalidArgument("input " + JobName(r.job) + " task " + std::to_string(r.task) + ": the job has " +
                                     std::to_string(p->Count()) + " tasks");
    n += r.all ? p->Count() : 1;
    if (n > kMaxInputsPerTask)
      return Status::InvalidArgument("a task takes more than " + std::to_string(kMaxInputsPerTask) + " inputs");
    if (structural) continue;
    const std::vector<int32_t>* index = p->def.return_outputs ? &OutputIndex(s.deps, *p) : nullptr;
    TaskIndex first = r.all ? 0 : r.task, last = r.all ? p->Count() : r.task + 1;
    for (TaskIndex i = first; i < last; ++i) {
      const std::string* out = nullptr;
      if (index) {
        int32_t at = (*index)[i];
        if (at < 0) {
          if (r.all) continue;  // `all` takes the committed ones (a k_of_n parent)
          return Status::InvalidArgument("input " + JobName(r.job) + " task " + std::to_string(i) +
                                         " has no committed output");
        }
        out = &p->outputs[static_cast<size_t>(at)].output;
      }
      if (Status st = visit(*p, i, out); !st.ok()) return st;
    }
  }
  return Status::Ok();
}

// Every input of `def` resolvable now, and within kMaxInputBytes per task.
Status CheckInputs(CoreState& s, const JobDef& def, bool structural) {
  auto check = [&](const TaskDef& t, const std::string& what) -> Status {
    uint64_t bytes = 0;
    Status st = ForEachInput(s, t, structural, [&](const Job&, TaskIndex, const std::string* out) {
      bytes += out ? out->size() : 0;
      if (bytes <= kMaxInputBytes) return Status::Ok();
      return Status::InvalidArgument("inputs exceed " + std::to_string(kMaxInputBytes) + " bytes");
    });
    return st.ok() ? st : Status::InvalidArgument(what + ": " + st.message());
  };
  for (size_t i = 0; i < def.tasks.size(); ++i)
    if (Status st = check(def.tasks[i], "task " + std::to_string(i)); !st.ok()) return st;
  if (def.template_count > 0)
    if (Status st = check(def.templ, "template"); !st.ok()) return st;
  return Status::Ok();
}

void Remember(DependencyBook& b, const Job& job) {
  if (b.forgotten.emplace(job.id, DependencyBook::Outcome{job.state, job.def.name, job.reason, job.def.owner}).second)
    b.forgotten_order.push_back(job.id);
  while (b.forgotten_order.size() > kMaxRememberedOutcomes) {
    b.forgotten.erase(b.forgotten_order.front());
    b.forgotten_order.pop_front();
  }
  b.output_index.erase(job.id);
}

// A parent's outcome, as the core still holds or remembers it; null: unknown.
const DependencyBook::Outcome* OutcomeOf(const CoreState& s, JobId id, DependencyBook::Outcome* held) {
  if (const Job* p = s.FindJob(id)) {
    *held = {p->state, p->def.name, p->reason, p->def.owner};
    return held;
  }
  auto it = s.deps.forgotten.find(id);
  return it == s.deps.forgotten.end() ? nullptr : &it->second;
}

// How a child ends when its parent ended in `o` (not succeeded).
std::pair<JobState, std::string> Inherited(JobId parent, const DependencyBook::Outcome& o) {
  bool cancelled = o.state == JobState::kCancelled;
  std::string why = "parent " + JobName(parent) + (o.name.empty() ? "" : " (" + o.name + ")") +
                    (cancelled ? " was cancelled" : " failed") + (o.reason.empty() ? "" : ": " + o.reason);
  return {cancelled ? JobState::kCancelled : JobState::kFailed, std::move(why)};
}

void Unblock(CoreState& s, Lifecycle& life, Placement& place, Job& job) {
  if (Status st = CheckInputs(s, job.def, false); !st.ok()) {
    life.FinishJob(job, JobState::kFailed, "its inputs cannot be resolved: " + st.message());
    return;
  }
  // The job's time limit counts from when it may run, not from its submission.
  double limit = job.def.timeout_s > 0 ? job.def.timeout_s : s.opt.job_timeout_s;
  if (limit > 0) s.job_deadlines.push({s.Now() + limit, job.id});
  ArmQuorumDeadline(s, job);
  place.MakeRunnable(job);
}

}  // namespace

Status CheckParents(CoreState& s, JobDef& def) {
  MergeInputJobs(def);
  if (def.after.size() > kMaxParents)
    return Status::InvalidArgument("after names " + std::to_string(def.after.size()) + " jobs; the limit is " +
                                   std::to_string(kMaxParents));
  bool all_finished = true;
  for (JobId p : def.after) {
    DependencyBook::Outcome held;
    const DependencyBook::Outcome* o = OutcomeOf(s, p, &held);
    if (!o)
      return Status::InvalidArgument("after: no " + JobName(p) +
                                     " (unknown, or finished and forgotten: the scheduler keeps finished jobs for "
                                     "core.job_retention and the outcomes of the last " +
                                     std::to_string(kMaxRememberedOutcomes) + " it evicted)");
    if (o->owner != def.owner) return Status::PermissionDenied("after: " + JobName(p) + " is not your job");
    if (o->state == JobState::kFailed || o->state == JobState::kCancelled)
      return Status::InvalidArgument("after: " + Inherited(p, *o).second + "; this job could never run");
    all_finished &= o->state != JobState::kRunning;
  }
  return CheckInputs(s, def, !all_finished);
}

void LinkParents(CoreState& s, Job& job) {
  MergeInputJobs(job.def);  // a restored job's spec is the client's
  for (JobId p : job.def.after) {
    DependencyBook::Outcome held;
    const DependencyBook::Outcome* o = OutcomeOf(s, p, &held);
    if (!o) {
      s.deps.doomed.push_back({job.id, {JobState::kFailed, "parent " + JobName(p) + " is unknown (forgotten)"}});
    } else if (o->state == JobState::kRunning) {
      job.waiting_for.push_back(p);
      s.deps.children[p].push_back(job.id);
    } else if (o->state != JobState::kSucceeded) {
      s.deps.doomed.push_back({job.id, Inherited(p, *o)});
    }
  }
  for (JobId p : InputJobs(job.def)) s.deps.pins[p]++;
  if (!s.deps.doomed.empty()) s.dirty = true;
}

void NoteFinished(CoreState& s, const Job& job) {
  if (s.deps.children.count(job.id)) s.deps.finished.push_back(job.id);
  for (JobId p : InputJobs(job.def)) {
    auto it = s.deps.pins.find(p);
    if (it != s.deps.pins.end() && --it->second == 0) {
      s.deps.pins.erase(it);
      s.deps.unpinned = true;
    }
  }
}

bool MayEvict(CoreState& s, const Job& job) {
  if (s.deps.pins.count(job.id)) {
    s.deps.deferred.push_back(job.id);
    return false;
  }
  Remember(s.deps, job);
  return true;
}

bool Settle(CoreState& s, Lifecycle& life, Placement& place) {
  DependencyBook& b = s.deps;
  bool changed = false;
  std::vector<std::pair<JobId, std::pair<JobState, std::string>>> doomed;
  doomed.swap(b.doomed);
  for (auto& [id, end] : doomed)
    if (Job* c = s.FindJob(id); c && c->state == JobState::kRunning) {
      life.FinishJob(*c, end.first, std::move(end.second));
      changed = true;
    }
  // A job whose parents all succeeded before it was linked (submitted
  // after them, or restored) needs no wake-up: LinkParents left it runnable.
  while (!b.finished.empty()) {
    JobId p = b.finished.front();
    b.finished.pop_front();
    auto kids = b.children.extract(p);
    if (kids.empty()) continue;
    DependencyBook::Outcome held;
    const DependencyBook::Outcome* o = OutcomeOf(s, p, &held);
    DependencyBook::Outcome gone{JobState::kFailed, "", "it was forgotten before its children ran", ""};
    if (!o) o = &gone;
    DependencyBook::Outcome outcome = *o;  // FinishJob below may evict p
    for (JobId id : kids.mapped()) {
      Job* c = s.FindJob(id);
      if (!c || c->state != JobState::kRunning) continue;  // ended while it waited
      c->waiting_for.erase(std::remove(c->waiting_for.begin(), c->waiting_for.end(), p), c->waiting_for.end());
      changed = true;
      if (outcome.state != JobState::kSucceeded) {
        auto [state, why] = Inherited(p, outcome);
        life.FinishJob(*c, state, std::move(why));  // queues c's own children: transitive
      } else if (c->waiting_for.empty()) {
        Unblock(s, life, place, *c);
      }
    }
  }
  if (!b.unpinned) return changed;
  b.unpinned = false;
  for (size_t i = 0; i < b.deferred.size();) {
    JobId id = b.deferred[i];
    const Job* j = s.FindJob(id);
    if (j && b.pins.count(id)) {
      ++i;
      continue;
    }
    b.deferred[i] = b.deferred.back();
    b.deferred.pop_back();
    if (!j) continue;
    Remember(b, *j);
    place.ForgetJob(*j);
    s.jobs.erase(id);
  }
  return changed;
}

Status ResolveInputs(CoreState& s, const Job& job, TaskIndex t, std::vector<ResolvedInput>* out) {
  out->clear();
  return ForEachInput(s, job.def.Task(t), false, [&](const Job& p, TaskIndex i, const std::string* output) {
    static const std::string kNone;
    out->push_back({p.id, i, output ? output : &kNone,
                    p.def.output_dir.empty() ? "" : p.def.output_dir + "/task-" + std::to_string(i)});
    return Status::Ok();
  });
}

std::vector<JobId> ParentsOfUnfinished(const CoreState& s) {
  std::vector<JobId> out;
  for (JobId id : s.running_jobs) {
    const Job& j = s.jobs.at(id);
    out.insert(out.end(), j.def.after.begin(), j.def.after.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace tailcut::core
