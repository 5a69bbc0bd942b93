#include "fuzz_targets.h"

#include <google/protobuf/stubs/logging.h>

#include "tailcut/common/log.h"

namespace tailcut::fuzz {

std::span<const Target> Targets() {
  static constexpr Target kTargets[] = {
      {"executor_message", ExecutorMessage}, {"client_request", ClientRequest},
      {"scheduler_to_executor", SchedulerToExecutor}, {"client_reply", ClientReply},
      {"config_toml", ConfigToml}, {"trace_csv", TraceCsv}, {"job_file", JobFile},
  };
  return kTargets;
}

void Quiet() {
  // protobuf also logs each string field that is not UTF-8.
  static const bool once = (SetLogLevel(LogLevel::kOff), google::protobuf::SetLogHandler(nullptr), true);
  (void)once;
}

}  // namespace tailcut::fuzz
