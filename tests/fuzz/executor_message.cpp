// The scheduler's executor socket: what SchedulerServer does with one
// ExecutorMessage (scheduler/server/src/server_executors.cpp, DrainExecutors), on a core
// that has a running job, through the same conversions (wire_convert.h).
#include "core_fixture.h"
#include "executor_reports.h"
#include "fuzz_targets.h"
#include "tailcut/wire/wire.h"
#include "wire_convert.h"

namespace tailcut::fuzz {

int ExecutorMessage(const uint8_t* data, size_t size) {
  Quiet();
  wire::ExecutorMessage msg;
  if (!msg.ParseFromArray(data, static_cast<int>(size)) || msg.version() != kProtocolVersion) return 0;
  CoreFixture f;
  const BadInputFn ignore = [](const std::string&) {};
  switch (msg.body_case()) {
    case wire::ExecutorMessage::kRegister: {
      // As a re-register of executor 1: its attempts are orphaned, then
      // taken back from what the Register lists.
      f.core.RemoveExecutor(f.executor, false, "re-registered");
      ExecutorId id = f.core.AddExecutor(ExecutorDescFromWire(msg.register_(), 1));
      wire::Work cancel;
      TakeBackFromWire(f.core, id, msg.register_(), &cancel, ignore);
      break;
    }
    case wire::ExecutorMessage::kReport:
      f.core.ExecutorSeen(f.executor);
      ApplyReport(f.core, f.executor, msg.report(), ignore);
      break;
    case wire::ExecutorMessage::kGoodbye: f.core.RemoveExecutor(f.executor, false, msg.goodbye().reason()); break;
    default: break;
  }
  // The loop turns that follow: policies, timeouts, launches on what is left.
  for (int i = 0; i < 3; ++i) f.Turn(5);
  (void)f.core.JobStatus(1);
  (void)f.core.Executors();
  return 0;
}

}  // namespace tailcut::fuzz
