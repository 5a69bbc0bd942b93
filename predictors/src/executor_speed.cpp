#include "executor_speed.h"

#include <algorithm>
#include <cmath>

namespace tailcut {

void ExecutorSpeedTracker::Observe(ExecutorId e, double ratio) {
  if (!(ratio > 0) || !std::isfinite(ratio)) return;
  Entry& en = m_[e];
  const double x = std::log(ratio);
  // Warm up with a plain mean so the first sample does not dominate.
  const double alpha = std::max(o_.alpha, 1.0 / static_cast<double>(en.n + 1));
  en.log_ewma += alpha * (x - en.log_ewma);
  en.speed = std::exp(en.log_ewma);
  ++en.n;
}

double ExecutorSpeedTracker::Speed(ExecutorId e) const {
  const Entry* en = m_.Find(e);
  if (!en || en->n < o_.min_samples) return 1.0;
  return en->speed;
}

uint64_t ExecutorSpeedTracker::Samples(ExecutorId e) const {
  const Entry* en = m_.Find(e);
  return en ? en->n : 0;
}

}  // namespace tailcut
