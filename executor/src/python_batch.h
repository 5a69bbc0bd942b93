// A batch of the `python` kernel on one worker (docs/PYTHON.md, "Batches"):
// its answers, starts, cancels, memory request and the worker's death.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tailcut/executor/kernel.h"

namespace tailcut::executor::python {

class Worker;

// Serves b's tasks 0 .. n-1, which went to `w` as its tasks base+1 ..
// base+n (the worker's numbers): reports each start and answer to `b`;
// a task cancelled while queued is skipped, a running one interrupted (and
// the worker killed when it has not stopped `grace_s` after). True when
// the worker answered every task and may serve again; false when it died
// or was killed (the caller replaces it): the task it had started fails, and
// so does the batch's first (reported started as it was sent); those it
// never started are left unfinished for the runtime to queue again.
bool ServeBatch(KernelBatch& b, Worker& w, size_t n, uint64_t base, double grace_s);

}  // namespace tailcut::executor::python
