// `first_free`: the executor that became free first takes the task; those a
// policy avoids only when nothing else has room (never for copies). Blind
// to executor speed: a slow executor gets work whenever it is free.
#pragma once

#include "placement_strategy.h"

namespace tailcut::core {

class FirstFreePlacement final : public PlacementStrategy {
 public:
  FirstFreePlacement(CoreState& s, Placement& place) : s_(s), place_(place) {}
  std::string_view name() const override { return "first_free"; }
  ExecutorId PickFree(const Job& job, TaskIndex t, bool copy, ExecutorId preferred,
                      ExecutorId fallback_only) override;

 private:
  CoreState& s_;
  Placement& place_;
};

}  // namespace tailcut::core
