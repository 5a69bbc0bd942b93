#include "tailcut/common/status.h"

namespace tailcut {

std::string Status::ToString() const {
  const char* name = "ok";
  switch (code_) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: name = "invalid argument"; break;
    case Code::kNotFound: name = "not found"; break;
    case Code::kFailedPrecondition: name = "failed precondition"; break;
    case Code::kResourceExhausted: name = "resource exhausted"; break;
    case Code::kUnavailable: name = "unavailable"; break;
    case Code::kPermissionDenied: name = "permission denied"; break;
    case Code::kIoError: name = "io error"; break;
    case Code::kInternal: name = "internal"; break;
    case Code::kTooLarge: name = "too large"; break;
  }
  return std::string(name) + ": " + message_;
}

}  // namespace tailcut

#include "tailcut/common/attempt_record.h"

namespace tailcut {

const char* AttemptOutcomeName(AttemptOutcome o) {
  switch (o) {
    case AttemptOutcome::kCommitted: return "committed";
    case AttemptOutcome::kSuperseded: return "superseded";
    case AttemptOutcome::kFailed: return "failed";
    case AttemptOutcome::kCancelled: return "cancelled";
    case AttemptOutcome::kExecutorLost: return "executor_lost";
  }
  return "unknown";
}

}  // namespace tailcut
