// The launches of a turn made ready for the driver (SchedulerCore::
// TakeCommands): a divisible job's shares fixed and told to the observers
// (the journal makes them durable before the launches go out), and each
// LaunchCmd given what its executor needs (LaunchCmd::spec), so that a
// driver never asks the core back while it sends them.
#pragma once

#include "core_state.h"

namespace tailcut::core {

void CompleteLaunches(CoreState& s);

}  // namespace tailcut::core
