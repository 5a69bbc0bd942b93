// The live driver's admission caps that the core cannot know: running jobs
// per owner, watched jobs per client, registered executors
// (docs/LIMITS.md). The core's own caps (tasks per job, queued tasks) are
// SchedulerCore::CheckAdmission.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>

#include "tailcut/common/ids.h"
#include "tailcut/common/status.h"

namespace tailcut {

struct AdmissionLimits {
  uint32_t max_jobs_per_owner = 0;       // 0 = no cap
  uint32_t max_watchers_per_client = 0;  // 0 = no cap
  uint32_t max_executors = 0;            // 0 = no cap
};

// Each Check* returns ResourceExhausted (BUSY on the wire: it frees up as
// jobs finish) naming the cap and its value, or ok.
class Admission {
 public:
  explicit Admission(AdmissionLimits limits) : limits_(limits) {}

  // `connection` ("" = none): without keys an owner is only a stated name,
  // so the server also counts running jobs per client connection and
  // holds each to max_jobs_per_owner (a new name per submit no longer
  // escapes the cap).
  Status CheckJob(const std::string& owner, const std::string& connection = "") const;
  void JobStarted(JobId job, const std::string& owner, const std::string& connection = "");
  void JobFinished(JobId job);  // any job; unknown ones are ignored

  Status CheckWatch(const std::string& client) const;
  void WatchAdded(const std::string& client);
  void WatchEnded(const std::string& client);

  Status CheckExecutor(size_t registered) const;

  uint32_t RunningJobsOf(const std::string& owner) const { return Get(jobs_per_owner_, owner); }
  uint32_t WatchersOf(const std::string& client) const { return Get(watchers_, client); }

 private:
  static uint32_t Get(const std::unordered_map<std::string, uint32_t>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? 0 : it->second;
  }
  static void Decrement(std::unordered_map<std::string, uint32_t>& m, const std::string& k);

  AdmissionLimits limits_;
  std::unordered_map<std::string, uint32_t> jobs_per_owner_;
  std::unordered_map<JobId, std::pair<std::string, std::string>> owner_of_;  // owner, connection key
  std::unordered_map<std::string, uint32_t> jobs_per_connection_;
  std::unordered_map<std::string, uint32_t> watchers_;
};

}  // namespace tailcut
