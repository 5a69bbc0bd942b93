#include "tailcut/predictors/straggler.h"

#include <algorithm>
#include <cmath>

#include "quantile_sketch.h"

namespace tailcut {

double NormalCdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double StragglerThreshold(const LogTimeDist& d, const StragglerOptions& o) {
  if (!d.known()) return 0;
  const double log_med = d.offset + d.residuals->Quantile(0.5);
  const double band = std::max(std::log(std::max(o.factor, 1.0)), o.sigmas * d.residuals->RobustSigma());
  return std::exp(log_med + band);
}

LatencyEstimate EstimateFromDistribution(const LogTimeDist& d, double speed_factor) {
  LatencyEstimate e;
  if (!d.known()) return e;
  const double s = speed_factor > 0 ? speed_factor : 1.0;
  e.median = s * std::exp(d.offset + d.residuals->Quantile(0.5));
  e.p90 = s * std::exp(d.offset + d.residuals->Quantile(0.9));
  e.p99 = s * std::exp(d.offset + d.residuals->Quantile(0.99));
  e.samples = d.samples;
  return e;
}

StragglerEstimate AssessFromDistribution(const LogTimeDist& d, const RunningAttempt& a,
                                         const StragglerOptions& o, double speed_factor) {
  StragglerEstimate out;
  const double elapsed = std::max(0.0, a.elapsed);
  const bool has_progress = a.progress >= o.min_progress && a.progress <= 1.0 && elapsed > 0;
  const double L = StragglerThreshold(d, o);

  if (has_progress) {
    const double p = std::min(a.progress, 1.0);
    const double t_hat = elapsed / p;
    out.expected_total = t_hat;
    out.time_left = t_hat - elapsed;
    if (L <= 0) return out;  // no history: LATE estimate only, no score
    if (elapsed >= L) {
      out.p_straggler = 1;
      return out;
    }
    const double s = std::max(1e-6, o.progress_sigma * std::sqrt((1.0 - p) / p));
    out.p_straggler = p >= 1.0 ? (t_hat > L ? 1.0 : 0.0) : 1.0 - NormalCdf((std::log(L) - std::log(t_hat)) / s);
    return out;
  }

  if (!d.known()) return out;
  const BinnedQuantiles& r = *d.residuals;
  const double shift = (o.use_speed && speed_factor > 0) ? std::log(speed_factor) : 0.0;
  const double base = d.offset + shift;  // ln T = base + R on this executor
  // Survival of "running at least this long".
  const double s_now = elapsed > 0 ? r.SmoothedSurvival(std::log(elapsed) - base) : 1.0;
  if (elapsed >= L) {
    out.p_straggler = 1;
  } else {
    const double s_l = r.SmoothedSurvival(std::log(L) - base);
    out.p_straggler = std::clamp(s_l / s_now, 0.0, 1.0);
  }
  // Conditional median of T given T > elapsed.
  const double q = 1.0 - 0.5 * std::min(1.0, s_now);
  double t_cond = std::exp(base + r.Quantile(q));
  if (s_now >= 0.999) t_cond = std::exp(base + r.Quantile(0.5));
  if (t_cond <= elapsed) t_cond = 2 * elapsed;  // beyond history: Lindy guess
  out.expected_total = t_cond;
  out.time_left = t_cond - elapsed;
  return out;
}

}  // namespace tailcut
