#include "quantile_predictor.h"

#include <cmath>

#include "tailcut/predictors/straggler.h"

namespace tailcut {

QuantilePredictor::QuantilePredictor(const PredictorOptions& opts) : DistributionPredictor(opts) {}

void QuantilePredictor::Observe(const AttemptRecord& r) {
  if (r.outcome != AttemptOutcome::kCommitted) return;
  const double d = r.Duration();
  if (!(d > 0)) return;
  auto it = classes_.find(std::string_view(r.task_class));
  if (it == classes_.end())
    it = classes_.emplace(r.task_class, BinnedQuantiles(opts_.sketch.bin_width, opts_.sketch.max_bins)).first;
  it->second.Add(std::log(d));
}

LogTimeDist QuantilePredictor::Distribution(std::string_view task_class, double) const {
  LogTimeDist d;
  auto it = classes_.find(task_class);
  if (it == classes_.end() || it->second.count() < opts_.min_samples) return d;
  d.residuals = &it->second;
  d.samples = it->second.count();
  return d;
}

}  // namespace tailcut
