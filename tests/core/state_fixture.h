// Builds the scheduler core's internal pieces over one CoreState with a
// FakeClock, for tests of a single piece (placement, proposal gate, ...)
// without the SchedulerCore facade and its Pump.
#pragma once

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "cluster_view.h"
#include "core_harness.h"
#include "core_state.h"
#include "lifecycle.h"
#include "placement.h"
#include "proposal_gate.h"

namespace tailcut::testing {

struct StateFixture {
  explicit StateFixture(CoreOptions o = {}, PolicyChain policies = {}) : s(o, &clock, std::move(policies), nullptr) {}

  ExecutorId Exec(uint32_t slots, uint32_t gpus = 0, std::vector<std::string> kernels = kTestKernels,
                  std::vector<std::pair<std::string, std::string>> labels = {}) {
    ExecutorDesc d;
    d.name = "e" + std::to_string(s.next_executor_id);
    d.slots = slots;
    d.gpus = gpus;
    d.kernels = std::move(kernels);
    d.labels = std::move(labels);
    return life.AddExecutor(std::move(d)).id;
  }

  core::Job& Job(uint32_t tasks, std::string kernel = "sleep") {
    JobDef j;
    j.name = "job";
    j.templ.kernel = std::move(kernel);
    j.template_count = tasks;
    return life.AddJob(std::move(j));
  }

  // Launches task `t` of `job` on `e` as the core would after placement.
  AttemptId Launch(core::Job& job, TaskIndex t, ExecutorId e, bool copy = false) {
    life.Launch(job, t, e, copy);
    return s.next_attempt_id - 1;
  }

  template <class T>
  std::vector<T> Commands() const {
    std::vector<T> out;
    for (const Command& c : s.commands)
      if (auto* x = std::get_if<T>(&c)) out.push_back(*x);
    return out;
  }

  FakeClock clock;
  core::CoreState s;
  core::StateView view{s};
  core::Placement place{s, view};
  core::Lifecycle life{s, place};
  core::ProposalGate gate{s, place, life};
};

// Advises against one executor.
struct AvoidPolicy : MitigationPolicy {
  explicit AvoidPolicy(ExecutorId e) : avoid(e) {}
  std::string_view name() const override { return "avoid"; }
  bool AvoidExecutor(const ClusterView&, ExecutorId e) const override { return e == avoid; }
  ExecutorId avoid;
};

}  // namespace tailcut::testing
