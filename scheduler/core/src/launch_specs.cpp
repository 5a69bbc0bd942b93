#include "launch_specs.h"

#include <utility>
#include <variant>

#include "dependencies.h"
#include "restore.h"

namespace tailcut::core {
namespace {

void FillSpec(CoreState& s, LaunchCmd& l, std::vector<ResolvedInput>* inputs) {
  const Job* job = s.FindJob(l.job);
  if (!job || l.task >= job->Count()) return;  // ended and evicted in this turn: its cancel follows
  const TaskDef& t = job->def.Task(l.task);
  LaunchSpec spec;
  if (!t.inputs.empty()) {
    // Checked when the job became runnable, its parents held until it
    // ends: this cannot fail; if it did, the attempt is not sent (never
    // with inputs missing) and its time limit ends it.
    if (Status st = ResolveInputs(s, *job, l.task, inputs); !st.ok()) {
      l.error = st.message();
      return;
    }
    spec.inputs.reserve(inputs->size());
    for (const ResolvedInput& r : *inputs) spec.inputs.push_back({r.job, r.task, *r.output, r.path});
  }
  spec.kernel = t.kernel;
  spec.args = t.args;
  spec.args_template = t.args_template;
  spec.cpu_slots = t.cpu_slots;
  spec.gpus = t.gpus;
  spec.memory_mb = t.memory_mb;
  spec.share = t.share;
  spec.output_dir = job->def.output_dir;
  l.spec = std::move(spec);
}

}  // namespace

void CompleteLaunches(CoreState& s) {
  std::vector<JobId> fixed;
  s.shares.Stamp(&s.commands, &fixed);
  std::vector<uint64_t> counts;
  AttemptId since = 0;
  for (JobId id : fixed)
    if (FixedShares(s, id, &counts, &since))
      for (CoreObserver* o : s.observers) o->OnSharesFixed(id, counts, since);
  std::vector<ResolvedInput> inputs;
  for (Command& c : s.commands)
    if (auto* l = std::get_if<LaunchCmd>(&c)) FillSpec(s, *l, &inputs);
}

}  // namespace tailcut::core
