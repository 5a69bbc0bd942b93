#include "regression_predictor.h"

#include <algorithm>
#include <cmath>

#include "tailcut/predictors/straggler.h"

namespace tailcut {

RegressionPredictor::RegressionPredictor(const PredictorOptions& opts)
    : DistributionPredictor(opts), classes_(opts.max_classes) {}

void RegressionPredictor::ClassModel::Refit() {
  const double den = sw * sxx - sx * sx;
  if (sw <= 0) return;
  // Degenerate spread of inputs: slope unidentifiable, use the mean only.
  if (den <= 1e-9 * sw * sw) {
    b = 0;
  } else {
    b = (sw * sxy - sx * sy) / den;
  }
  a = (sy - b * sx) / sw;
}

void RegressionPredictor::Observe(const AttemptRecord& r) {
  if (r.outcome != AttemptOutcome::kCommitted) return;
  const double d = r.Duration();
  if (!(d > 0)) return;
  ClassModel& m = classes_.Update(r.task_class, [&] { return ClassModel(opts_.sketch); });
  const double y = std::log(d);
  m.all.Add(y);
  if (!(r.input_size > 0)) return;
  const double x = std::log(r.input_size);

  double w = 1.0;
  if (m.n >= opts_.regression.min_samples) {
    const double res = y - (m.a + m.b * x);
    m.residuals.Add(res);
    if (m.residuals.count() >= 20 && opts_.regression.huber_k > 0) {
      const double sigma = std::max(m.residuals.RobustSigma(), 1e-3);
      const double dev = std::abs(res - m.residuals.Quantile(0.5));
      const double lim = opts_.regression.huber_k * sigma;
      if (dev > lim) w = lim / dev;
    }
  }
  const double f = opts_.regression.forget;
  if (f < 1.0) {
    m.sw *= f; m.sx *= f; m.sy *= f; m.sxx *= f; m.sxy *= f;
  }
  m.sw += w;
  m.sx += w * x;
  m.sy += w * y;
  m.sxx += w * x * x;
  m.sxy += w * x * y;
  ++m.n;
  m.Refit();
}

LogTimeDist RegressionPredictor::Distribution(std::string_view task_class, double input_size) const {
  LogTimeDist d;
  const ClassModel* found = classes_.Find(task_class);
  if (!found) return d;
  const ClassModel& m = *found;
  if (input_size > 0 && m.n >= opts_.regression.min_samples && m.residuals.count() >= opts_.min_samples) {
    d.offset = m.a + m.b * std::log(input_size);
    d.residuals = &m.residuals;
    d.samples = m.n;
    return d;
  }
  if (m.all.count() < opts_.min_samples) return d;
  d.residuals = &m.all;
  d.samples = m.all.count();
  return d;
}

bool RegressionPredictor::Coefficients(std::string_view task_class, double* a, double* b) const {
  const ClassModel* m = classes_.Find(task_class);
  if (!m || m->n == 0) return false;
  *a = m->a;
  *b = m->b;
  return true;
}

}  // namespace tailcut
