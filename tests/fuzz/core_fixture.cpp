#include "core_fixture.h"

#include "tailcut/common/config.h"
#include "tailcut/policies/registry.h"

namespace tailcut::fuzz {
namespace {

PolicyChain DefaultChain() {
  static const Config empty = *Config::Parse("", "<fuzz>");
  auto chain = MakePolicyChain("default", empty);
  return chain.ok() ? std::move(chain).value() : PolicyChain{};
}

}  // namespace

CoreFixture::CoreFixture() : clock(1000), core(CoreOptions{}, &clock, DefaultChain()) {
  ExecutorDesc e;
  e.name = "e1";
  e.slots = 4;
  e.kernels = {"noop", "sleep", "spin"};  // an executor runs exactly the kernels it lists
  executor = core.AddExecutor(e);
  JobDef job;
  job.name = "fixture";
  job.templ.kernel = "noop";
  job.template_count = 8;
  (void)core.SubmitJob(std::move(job));
  Turn(0);
}

void CoreFixture::Turn(double dt) {
  clock.Advance(dt);
  core.Tick();
  commands_.clear();
  core.TakeCommands(&commands_);
}

}  // namespace tailcut::fuzz
