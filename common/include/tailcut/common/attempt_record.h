// The timing record of one attempt: what predictors learn from and what
// benchmarks read. The scheduler core emits one when an attempt ends.
#pragma once

#include <string>

#include "tailcut/common/clock.h"
#include "tailcut/common/ids.h"

namespace tailcut {

enum class AttemptOutcome {
  kCommitted,     // finished first; its result is the task's result
  kSuperseded,    // another attempt of the task committed first; cancelled
  kFailed,        // the kernel reported an error
  kCancelled,     // the job ended (cancelled, k_of_n reached, failed)
  kExecutorLost,  // its executor died or left
};

const char* AttemptOutcomeName(AttemptOutcome o);

struct AttemptRecord {
  JobId job = 0;
  TaskIndex task = 0;
  AttemptId attempt = 0;
  ExecutorId executor = 0;
  std::string task_class;   // the kernel name unless the job set a class
  double input_size = 0;    // task feature; 0 when unknown
  Time queued = 0;          // launch decided (scheduler clock)
  Time started = -1;        // executor began running it; -1 if never
  Time finished = -1;       // result or end observed by the scheduler
  double run_s = 0;         // executor-measured run time (0 if unknown)
  AttemptOutcome outcome = AttemptOutcome::kCancelled;
  bool copy = false;        // a redundant copy (speculation, clone, hedge)
  // Run time if it finished, else time it ran before being stopped.
  double Duration() const { return run_s > 0 ? run_s : (started >= 0 && finished >= started ? finished - started : 0); }
};

}  // namespace tailcut
