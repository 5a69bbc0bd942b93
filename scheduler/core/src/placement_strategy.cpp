#include "placement_strategy.h"

#include "placement_expected_finish.h"
#include "placement_first_free.h"

namespace tailcut::core {

std::vector<std::string> PlacementStrategyNames() { return {"expected_finish", "first_free"}; }

std::unique_ptr<PlacementStrategy> MakePlacementStrategy(std::string_view name, CoreState& s, Placement& place) {
  if (name == "expected_finish") return std::make_unique<ExpectedFinishPlacement>(s, place);
  if (name == "first_free") return std::make_unique<FirstFreePlacement>(s, place);
  return nullptr;
}

}  // namespace tailcut::core
