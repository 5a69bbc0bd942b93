// Per-task-class online regression ln(run time) = a + b * ln(input_size)
// (a power law; b = 1 is "time proportional to input"), fitted by weighted
// least squares with Huber-style down-weighting of outliers (stragglers) and
// optional exponential forgetting. Residuals (computed prequentially, i.e.
// against the fit before the point is added) feed a BinnedQuantiles sketch,
// so a task slow only because its input is bigger is not a straggler.
// Attempts without an input size (<= 0) and classes with too few sized
// samples fall back to the class's plain run-time quantiles.
#pragma once

#include "distribution_predictor.h"
#include "quantile_sketch.h"
#include "string_map.h"

namespace tailcut {

class RegressionPredictor final : public DistributionPredictor {
 public:
  explicit RegressionPredictor(const PredictorOptions& opts = {});
  std::string_view name() const override { return "regression"; }
  void Observe(const AttemptRecord& r) override;
  LogTimeDist Distribution(std::string_view task_class, double input_size) const override;

  // Current fit of a class: false when it has none yet.
  bool Coefficients(std::string_view task_class, double* a, double* b) const;

 private:
  struct ClassModel {
    explicit ClassModel(const SketchOptions& s)
        : all(s.bin_width, s.max_bins), residuals(s.bin_width, s.max_bins) {}
    BinnedQuantiles all;        // ln T of every committed attempt (fallback)
    BinnedQuantiles residuals;  // ln T - (a + b ln x)
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;  // weighted sums
    uint64_t n = 0;             // sized observations
    double a = 0, b = 0;
    void Refit();
  };
  BoundedStringMap<ClassModel> classes_;
};

}  // namespace tailcut
