// A scheduler core as the daemon builds it (default policy chain, virtual
// clock) with one executor and one running job, for the wire targets:
// executor 1 ("e1", 4 slots, noop, sleep and spin) runs job 1 (8 noop tasks), so
// attempts 1-4 are live on it and a fuzzed Report can name them.
#pragma once

#include <vector>

#include "tailcut/common/clock.h"
#include "tailcut/core/scheduler_core.h"

namespace tailcut::fuzz {

class CoreFixture {
 public:
  CoreFixture();
  // Lets virtual time pass and the core act, as a daemon loop turn does.
  void Turn(double dt = 0.5);

  FakeClock clock;
  SchedulerCore core;
  ExecutorId executor = 0;

 private:
  std::vector<Command> commands_;
};

}  // namespace tailcut::fuzz
