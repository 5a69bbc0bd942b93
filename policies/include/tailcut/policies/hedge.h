// `hedge`: hedged requests (Dean & Barroso, The Tail at Scale): once an
// attempt has run longer than the p95 of its job's run times, launch one
// hedge copy.
#pragma once

#include <memory>
#include <string>

#include "tailcut/common/config.h"
#include "tailcut/common/status.h"
#include "tailcut/core/policy.h"

namespace tailcut {

struct HedgeOptions {
  double quantile = 0.95;    // hedge after this quantile of run times
  uint32_t min_samples = 5;  // committed run times (or predictor samples) needed
  double min_delay_s = 0.0;  // never hedge earlier than this
  bool speculate_coded = false;
};
Status LoadHedgeOptions(const Config& cfg, const std::string& prefix, HedgeOptions* o);

class HedgePolicy final : public MitigationPolicy {
 public:
  explicit HedgePolicy(HedgeOptions o = {});
  std::string_view name() const override { return "hedge"; }
  void OnTick(const ClusterView& v, std::vector<Proposal>* out) override;

 private:
  struct State;
  HedgeOptions o_;
  std::shared_ptr<State> st_;
};

StatusOr<std::unique_ptr<MitigationPolicy>> MakeHedgePolicy(const Config& cfg, const std::string& prefix);

}  // namespace tailcut
