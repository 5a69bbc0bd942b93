#include "placement_first_free.h"

#include "placement.h"

namespace tailcut::core {

ExecutorId FirstFreePlacement::PickFree(const Job& job, TaskIndex t, bool copy, ExecutorId preferred,
                                        ExecutorId fallback_only) {
  if (preferred) {
    if (ExecutorState* e = s_.FindExec(preferred); e && place_.Fits(job, t, *e, copy)) return preferred;
  }
  // Placement::PickFree dropped the stale entries at the front. Executors a
  // policy avoids wait in their own list (Placement::RefreshAvoid), so this
  // walk does not pass them.
  ExecutorId fallback = 0;
  for (ExecutorId id : s_.free) {
    ExecutorState* e = s_.FindExec(id);
    if (!e || !place_.Fits(job, t, *e, copy)) continue;
    if (id == fallback_only || place_.PolicyAvoids(id)) {
      if (!fallback) fallback = id;
      continue;
    }
    return id;
  }
  if (copy) return 0;  // copies never go where a policy advises against
  for (ExecutorId id : s_.free_avoided) {
    ExecutorState* e = s_.FindExec(id);
    if (!e || !e->in_free_avoided || !place_.Fits(job, t, *e, copy)) continue;
    if (id != fallback_only) return id;
    if (!fallback) fallback = id;
  }
  return fallback;
}

}  // namespace tailcut::core
