#include "placement_first_free.h"

#include "placement.h"

namespace tailcut::core {

ExecutorId FirstFreePlacement::PickFree(const Job& job, TaskIndex t, bool copy, ExecutorId preferred,
                                        ExecutorId fallback_only) {
  if (preferred) {
    if (Executor* e = s_.FindExec(preferred); e && place_.Fits(job, t, *e, copy)) return preferred;
  }
  // Placement::PickFree dropped the stale entries at the front.
  ExecutorId fallback = 0;
  for (ExecutorId id : s_.free) {
    Executor* e = s_.FindExec(id);
    if (!e || !place_.Fits(job, t, *e, copy)) continue;
    if (id == fallback_only || place_.PolicyAvoids(id)) {
      if (!fallback) fallback = id;
      continue;
    }
    return id;
  }
  return copy ? 0 : fallback;
}

}  // namespace tailcut::core
