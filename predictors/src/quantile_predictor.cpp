#include "quantile_predictor.h"

#include <cmath>

#include "tailcut/predictors/straggler.h"

namespace tailcut {

QuantilePredictor::QuantilePredictor(const PredictorOptions& opts)
    : DistributionPredictor(opts), classes_(opts.max_classes) {}

void QuantilePredictor::Observe(const AttemptRecord& r) {
  if (r.outcome != AttemptOutcome::kCommitted) return;
  const double d = r.Duration();
  if (!(d > 0)) return;
  classes_.Update(r.task_class, [&] { return BinnedQuantiles(opts_.sketch.bin_width, opts_.sketch.max_bins); })
      .Add(std::log(d));
}

LogTimeDist QuantilePredictor::Distribution(std::string_view task_class, double) const {
  LogTimeDist d;
  const BinnedQuantiles* q = classes_.Find(task_class);
  if (!q || q->count() < opts_.min_samples) return d;
  d.residuals = q;
  d.samples = q->count();
  return d;
}

}  // namespace tailcut
