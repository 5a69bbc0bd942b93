// Trace CSV (docs/TRACE_FORMAT.md): the predictors' parser, the offline
// evaluation over its rows (`tailcut predict-eval`) and the simulator's
// trace jobs (workload.arrival = "trace").
#include <string>

#include "fuzz_targets.h"
#include "tailcut/predictors/eval.h"
#include "tailcut/predictors/trace.h"
#include "tailcut/sim/scenario.h"

namespace tailcut::fuzz {

int TraceCsv(const uint8_t* data, size_t size) {
  Quiet();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto rows = ParseTraceCsv(text, "<fuzz>");
  if (!rows.ok()) return 0;
  (void)EvaluateRows(*rows, EvalOptions{});
  (void)sim::TraceJobsFromRows(*rows, "<fuzz>");
  return 0;
}

}  // namespace tailcut::fuzz
