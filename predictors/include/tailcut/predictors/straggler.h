// Straggler scoring shared by all latency predictors.
//
// Threshold: an attempt is a straggler when its total run time exceeds
//   L = m * max(factor, exp(sigmas * sigma_r))
// where m is the typical (executor-independent) median for its features and
// sigma_r the robust sigma of the log residuals. So a low-noise class uses
// factor x median (Spark's rule), a noisy class uses a 3-sigma band.
//
// p_straggler = P(T > L | what is known):
//  * elapsed >= L                   -> 1
//  * progress >= min_progress (LATE) -> T_hat = elapsed / progress and
//      ln T ~ N(ln T_hat, s^2), s = progress_sigma * sqrt((1-p)/p)
//  * otherwise (elapsed only)       -> S(ln(L/m) - shift) / S(ln(elapsed/m) - shift),
//      S the smoothed survival of the residuals, shift = ln(executor speed).
// time_left: LATE estimate with progress, else the conditional median of T
// given T > elapsed, minus elapsed (elapsed itself, Lindy-style, when the
// attempt is already beyond nearly all history).
#pragma once

#include "tailcut/predictors/predictor.h"

namespace tailcut {

double NormalCdf(double z);

// Threshold L in seconds for a distribution (0 when unknown).
double StragglerThreshold(const LogTimeDist& d, const StragglerOptions& o);

// speed_factor: the executor's relative speed (1 = typical).
StragglerEstimate AssessFromDistribution(const LogTimeDist& d, const RunningAttempt& a,
                                         const StragglerOptions& o, double speed_factor = 1.0);

// median / p90 / p99 of a distribution, scaled by speed_factor.
LatencyEstimate EstimateFromDistribution(const LogTimeDist& d, double speed_factor = 1.0);

}  // namespace tailcut
