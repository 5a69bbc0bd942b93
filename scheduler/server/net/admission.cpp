#include "admission.h"

namespace tailcut {
namespace {

// ResourceExhausted "<before><n><after> (<key> = <limit>); retry later" once
// n reaches a non-zero limit.
Status AtCap(uint64_t n, uint32_t limit, const char* before, const char* after, const char* key) {
  if (limit == 0 || n < limit) return Status::Ok();
  return Status::ResourceExhausted(before + std::to_string(n) + after + " (" + key + " = " + std::to_string(limit) +
                                   "); retry later");
}

}  // namespace

void Admission::Decrement(std::unordered_map<std::string, uint32_t>& m, const std::string& k) {
  auto it = m.find(k);
  if (it == m.end()) return;
  if (--it->second == 0) m.erase(it);  // the maps hold active owners and clients only
}

Status Admission::CheckJob(const std::string& owner, const std::string& connection) const {
  Status s = AtCap(RunningJobsOf(owner), limits_.max_jobs_per_owner, "this owner already has ", " running jobs",
                   "scheduler.max_jobs_per_owner");
  if (s.ok() && !connection.empty())
    s = AtCap(Get(jobs_per_connection_, connection), limits_.max_jobs_per_owner, "this connection already has ",
              " running jobs", "scheduler.max_jobs_per_owner, per connection without keys");
  return s;
}

void Admission::JobStarted(JobId job, const std::string& owner, const std::string& connection) {
  if (!owner_of_.emplace(job, std::pair{owner, connection}).second) return;
  ++jobs_per_owner_[owner];
  if (!connection.empty()) ++jobs_per_connection_[connection];
}

void Admission::JobFinished(JobId job) {
  auto it = owner_of_.find(job);
  if (it == owner_of_.end()) return;
  Decrement(jobs_per_owner_, it->second.first);
  if (!it->second.second.empty()) Decrement(jobs_per_connection_, it->second.second);
  owner_of_.erase(it);
}

Status Admission::CheckWatch(const std::string& client) const {
  return AtCap(WatchersOf(client), limits_.max_watchers_per_client, "this client already watches ", " jobs",
               "scheduler.max_watchers_per_client");
}

void Admission::WatchAdded(const std::string& client) { ++watchers_[client]; }
void Admission::WatchEnded(const std::string& client) { Decrement(watchers_, client); }

Status Admission::CheckExecutor(size_t registered) const {
  return AtCap(registered, limits_.max_executors, "", " executors are registered", "scheduler.max_executors");
}

}  // namespace tailcut
