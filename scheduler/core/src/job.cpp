#include "tailcut/core/job.h"

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

}  // namespace tailcut
