// The first attempt of each task launched and not yet committed, by (job,
// task): what SelectorPolicy needs to tell a task's first run from its
// repeats. It was an std::map of (job, task) -> attempt, a node allocated,
// rebalanced and freed per task (issue 41); here each job's tasks are a
// vector by task index, so an entry costs a slot, and the jobs an ordered
// map of the few with entries. Same contents and the same eviction order as
// that map: EraseSmallest drops the smallest (job, task).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "tailcut/common/ids.h"

namespace tailcut::policy_util {

class FirstAttempts {
 public:
  FirstAttempts() = default;
  FirstAttempts(const FirstAttempts&) = delete;  // holds iterators into itself
  FirstAttempts& operator=(const FirstAttempts&) = delete;

  // Records `a` as the first attempt of (job, task) unless one is recorded.
  void Add(JobId job, TaskIndex task, AttemptId a) {
    Job& j = Get(job);
    if (empty_ != jobs_.end() && &empty_->second == &j) empty_ = jobs_.end();  // has entries again
    // Grown by doubling: tasks come in index order, one resize each cost a
    // call per task (issue 41).
    if (task >= j.first.size()) j.first.resize(std::max<size_t>(static_cast<size_t>(task) + 1, 2 * j.first.size()), 0);
    if (j.first[task] != 0) return;
    j.first[task] = a;
    j.low = j.count == 0 ? task : std::min(j.low, task);
    ++j.count;
    ++size_;
  }
  // The first attempt of (job, task); 0 when none is recorded.
  AttemptId Find(JobId job, TaskIndex task) {
    Job* j = Lookup(job);
    return j && task < j->first.size() ? j->first[task] : 0;
  }
  void Erase(JobId job, TaskIndex task) {
    Job* j = Lookup(job);
    if (!j || task >= j->first.size() || j->first[task] == 0) return;
    j->first[task] = 0;
    Dropped(job, *j);
  }
  // Drops the entry of the smallest (job, task).
  void EraseSmallest() {
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      Job& j = it->second;
      if (j.count == 0) {  // the one kept empty (Dropped)
        it = EraseJob(it);
        continue;
      }
      while (j.first[j.low] == 0) ++j.low;
      j.first[j.low] = 0;
      Dropped(it->first, j);
      return;
    }
  }
  size_t size() const { return size_; }

 private:
  struct Job {
    std::vector<AttemptId> first;  // by task index; 0: none recorded
    uint32_t count = 0;            // entries of `first` that are set
    TaskIndex low = 0;             // no entry below it (while count > 0)
  };
  using Map = std::map<JobId, Job>;

  Job* Lookup(JobId job) {
    if (cached_ != jobs_.end() && cached_->first == job) return &cached_->second;
    auto it = jobs_.find(job);
    if (it == jobs_.end()) return nullptr;
    cached_ = it;
    return &it->second;
  }
  Job& Get(JobId job) {
    if (Job* j = Lookup(job)) return *j;
    if (empty_ != jobs_.end()) EraseJob(empty_);
    cached_ = jobs_.try_emplace(job).first;
    return cached_->second;
  }
  // One entry of `j` went. A job left without entries keeps its map entry
  // and vector until another job's entry is made or goes empty (so a job
  // whose tasks run one at a time allocates nothing per task); at most one
  // such job is kept.
  void Dropped(JobId job, Job& j) {
    --j.count;
    --size_;
    if (j.count > 0) return;
    auto it = cached_ != jobs_.end() && cached_->first == job ? cached_ : jobs_.find(job);
    if (empty_ != jobs_.end() && empty_ != it) EraseJob(empty_);
    empty_ = it;
  }
  Map::iterator EraseJob(Map::iterator it) {
    if (cached_ == it) cached_ = jobs_.end();
    if (empty_ == it) empty_ = jobs_.end();
    return jobs_.erase(it);
  }

  Map jobs_;
  Map::iterator cached_ = jobs_.end();  // the job looked up last
  Map::iterator empty_ = jobs_.end();   // the job kept without entries
  size_t size_ = 0;
};

}  // namespace tailcut::policy_util
