// A small harness that drives SchedulerCore with a FakeClock and records
// its commands, so tests read like event scripts.
#pragma once

#include <map>
#include <stdexcept>
#include <set>
#include <string>
#include <vector>

#include "tailcut/core/scheduler_core.h"

namespace tailcut::testing {

struct Recorder : CoreObserver {
  std::vector<AttemptRecord> records;
  std::vector<JobStatusInfo> finished;
  void OnAttemptEnded(const AttemptRecord& r) override { records.push_back(r); }
  void OnJobFinished(const JobStatusInfo& j) override { finished.push_back(j); }
  size_t Count(AttemptOutcome o) const {
    size_t n = 0;
    for (auto& r : records) n += r.outcome == o;
    return n;
  }
};

// What the harnesses' executors run unless a test names their kernels: an
// executor always lists its kernels (an empty list runs none), so tests list
// every name they submit.
inline const std::vector<std::string> kTestKernels = {"coded_matmul", "g",     "gradient_worker", "k",   "matmul",
                                                      "noop",         "sleep", "spin",            "train"};

// The kernels of `kernels` an executor declares not idempotent, as the
// executor daemon does for its built-ins (shell, exec).
inline std::vector<std::string> SideEffectKernels(const std::vector<std::string>& kernels) {
  std::vector<std::string> out;
  for (const std::string& k : kernels)
    if (k == "shell" || k == "exec") out.push_back(k);
  return out;
}

// Proposes a copy of every running attempt of `job` at each tick.
class CopyEverything : public MitigationPolicy {
 public:
  explicit CopyEverything(JobId job) : job_(job) {}
  std::string_view name() const override { return "copy_everything"; }
  void OnTick(const ClusterView& v, std::vector<Proposal>* out) override {
    v.ForEachRunningAttempt([&](const AttemptView& a) {
      if (a.job == job_ && !a.copy) out->push_back(Proposal::LaunchCopy(a.job, a.task, "test"));
    });
  }

 private:
  JobId job_;
};

// Options for tests whose executors send no heartbeats.
inline CoreOptions NoHeartbeats() {
  CoreOptions o;
  o.lost_after_s = 0;
  return o;
}

class CoreHarness {
 public:
  explicit CoreHarness(CoreOptions o = {}, PolicyChain policies = {}) : core(o, &clock, std::move(policies)) {
    core.AddObserver(&recorder);
  }

  ExecutorId Exec(uint32_t slots, uint32_t gpus = 0, std::vector<std::string> kernels = kTestKernels,
                  std::vector<std::pair<std::string, std::string>> labels = {}) {
    ExecutorDesc d;
    d.name = "e" + std::to_string(++n_exec_);
    d.host = "host-" + std::to_string(n_exec_);
    d.slots = slots;
    d.gpus = gpus;
    d.side_effect_kernels = SideEffectKernels(kernels);
    d.kernels = std::move(kernels);
    d.labels = std::move(labels);
    return core.AddExecutor(d);
  }

  // An executor named `name`: registering again under the same name is the
  // same identity (ExecutorDesc::identity), which may bring back its attempts.
  ExecutorId ExecAs(const std::string& name, uint32_t slots, std::vector<std::string> kernels = kTestKernels) {
    ExecutorDesc d;
    d.name = name;
    d.slots = slots;
    d.kernels = std::move(kernels);
    return core.AddExecutor(d);
  }

  static JobDef Fanout(uint32_t n, std::string kernel = "sleep") {
    JobDef j;
    j.name = "fanout";
    j.templ.kernel = std::move(kernel);
    j.template_count = n;
    return j;
  }

  // Runs the core's pump and sorts its commands into the lists below.
  void Drain() {
    std::vector<Command> cmds;
    core.TakeCommands(&cmds);
    for (auto& c : cmds) {
      if (auto* l = std::get_if<LaunchCmd>(&c)) {
        launches.push_back(*l);
        live[l->attempt] = *l;
      } else if (auto* x = std::get_if<CancelCmd>(&c)) {
        cancels.push_back(*x);
        live.erase(x->attempt);
      } else if (auto* t = std::get_if<TaskCommittedCmd>(&c)) {
        commits.push_back(*t);
      } else if (auto* f = std::get_if<JobFinishedCmd>(&c)) {
        finished[f->job] = *f;
      } else if (auto* e = std::get_if<ExecutorChangedCmd>(&c)) {
        exec_changes.push_back(*e);
      } else if (auto* p = std::get_if<PromoteCmd>(&c)) {
        promotes.push_back(*p);
      }
    }
  }

  // Submits `j`, which must be accepted, and places what fits.
  JobId Submit(JobDef j) {
    auto id = core.SubmitJob(std::move(j));
    if (!id.ok()) throw std::runtime_error("submit refused: " + id.status().message());
    Drain();
    return *id;
  }

  // Lets `dt` seconds pass, then ticks the core and collects its commands.
  void Pass(double dt) {
    clock.Advance(dt);
    core.Tick();
    Drain();
  }

  // Completes a live attempt successfully.
  void Finish(AttemptId a, double run_s = 1.0, std::string out = "") {
    live.erase(a);
    core.AttemptSucceeded(a, std::move(out), run_s);
    Drain();
  }

  std::vector<AttemptId> LiveOn(ExecutorId e) const {
    std::vector<AttemptId> v;
    for (auto& [id, l] : live)
      if (l.executor == e) v.push_back(id);
    return v;
  }

  FakeClock clock;
  SchedulerCore core;
  Recorder recorder;
  std::vector<LaunchCmd> launches;
  std::vector<CancelCmd> cancels;
  std::vector<TaskCommittedCmd> commits;
  std::map<JobId, JobFinishedCmd> finished;
  std::vector<ExecutorChangedCmd> exec_changes;
  std::vector<PromoteCmd> promotes;
  std::map<AttemptId, LaunchCmd> live;

 private:
  int n_exec_ = 0;
};

}  // namespace tailcut::testing
