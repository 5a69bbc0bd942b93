// The part both built-in predictors share: once a predictor can say what
// ln(run time) looks like for a task (Distribution), predictions and
// straggler scores follow from it the same way (straggler.h).
#pragma once

#include "tailcut/predictors/predictor.h"
#include "tailcut/predictors/straggler.h"

namespace tailcut {

class DistributionPredictor : public LatencyPredictor {
 public:
  LatencyEstimate Predict(std::string_view task_class, double input_size, ExecutorId) const final {
    return EstimateFromDistribution(Distribution(task_class, input_size));
  }
  StragglerEstimate Assess(const RunningAttempt& a) const final {
    return AssessFromDistribution(Distribution(a.task_class, a.input_size), a, opts_.straggler);
  }

 protected:
  explicit DistributionPredictor(const PredictorOptions& opts) : opts_(opts) {}
  PredictorOptions opts_;
};

}  // namespace tailcut
