// Per-task-class streaming quantiles of ln(run time). Ignores input size.
#pragma once

#include <string>

#include "distribution_predictor.h"
#include "quantile_sketch.h"
#include "string_map.h"

namespace tailcut {

class QuantilePredictor final : public DistributionPredictor {
 public:
  explicit QuantilePredictor(const PredictorOptions& opts = {});
  std::string_view name() const override { return "quantile"; }
  void Observe(const AttemptRecord& r) override;
  LogTimeDist Distribution(std::string_view task_class, double input_size) const override;
  size_t classes() const { return classes_.size(); }

 private:
  BoundedStringMap<BinnedQuantiles> classes_;
};

}  // namespace tailcut
