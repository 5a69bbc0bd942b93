#include "cluster_view.h"

#include <algorithm>

namespace tailcut::core {

void FillJobView(const Job& j, JobView* v) {
  v->id = j.id;
  v->def = &j.def;
  v->submitted = j.submitted;
  v->tasks = j.Count();
  v->committed = j.committed;
  v->unlaunched = j.Count() - j.next_unlaunched;
  v->running = j.running;
  v->copies = j.copies;
  v->needed = j.needed;
}

void FillExecView(const ExecutorState& e, ExecutorView* v) {
  v->id = e.id;
  v->name = e.desc.name;
  v->slots = e.desc.slots;
  v->gpus = e.desc.gpus;
  v->used_slots = e.used_slots;
  v->running = static_cast<uint32_t>(e.attempts.size());
  v->finished = e.finished;
  v->quarantined = e.quarantined;
}

void StateView::ForEachJob(const std::function<void(const JobView&)>& fn) const {
  for (JobId id : s_.running_jobs) fn(MakeJobView(s_.jobs.at(id)));
}

void StateView::ForEachRunningAttempt(const std::function<void(const AttemptView&)>& fn) const {
  for (auto& [id, a] : s_.attempts) fn(s_.ViewOf(a));
}

void StateView::ForEachAttemptOn(ExecutorId e, const std::function<void(const AttemptView&)>& fn) const {
  const ExecutorState* x = s_.FindExec(e);
  if (!x) return;
  // Sorted: the executor's set is unordered, and policies must act in a
  // deterministic order.
  for (AttemptId a : x->attempts.Sorted()) fn(s_.ViewOf(s_.attempts.at(a)));
}

bool StateView::FindAttempt(AttemptId a, AttemptView* out) const {
  auto it = s_.attempts.find(a);
  if (it == s_.attempts.end()) return false;
  s_.FillView(it->second, out);
  return true;
}

void StateView::ForEachExecutor(const std::function<void(const ExecutorView&)>& fn) const {
  for (auto& [id, e] : s_.executors) fn(MakeExecView(e));
}

bool StateView::FindJob(JobId id, JobView* out) const {
  const Job* job = s_.FindJob(id);
  if (!job) return false;
  FillJobView(*job, out);
  return true;
}

bool StateView::FindExecutor(ExecutorId id, ExecutorView* out) const {
  const ExecutorState* e = s_.FindExec(id);
  if (!e) return false;
  FillExecView(*e, out);
  return true;
}

const std::vector<float>& StateView::CommittedRunTimes(JobId id) const {
  static const std::vector<float> kEmpty;
  const Job* job = s_.FindJob(id);
  return job ? job->run_times : kEmpty;
}

double StateView::MedianRunTime(JobId id) const {
  const Job* job = s_.FindJob(id);
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

}  // namespace tailcut::core
