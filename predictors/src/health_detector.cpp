#include "health_detector.h"

#include <algorithm>
#include <cmath>

namespace tailcut {

CusumHealthDetector::CusumHealthDetector(HealthOptions o) : o_(o) {
  o_.window = std::max<uint32_t>(o_.window, std::max(o_.confirm_min, o_.recover_window));
  o_.window = std::max<uint32_t>(o_.window, 1);
  drift_ = o_.drift > 0 ? o_.drift : std::log(std::max(o_.fail_slow_factor, 1.0 + 1e-6)) / 2;
}

void CusumHealthDetector::Push(Exec& x, float v) const {
  if (x.ring.empty()) x.ring.assign(o_.window, 0.f);
  x.ring[x.head] = v;
  x.head = (x.head + 1) % o_.window;
  if (x.size < o_.window) ++x.size;
}

// Lower-median style order statistic: element floor(q * (k-1)) after sorting,
// except q = 0.5 which averages the two middle ones for even k.
double CusumHealthDetector::QuantileOfLast(const Exec& x, uint32_t k, double q) const {
  k = std::min(k, x.size);
  if (k == 0) return 0;
  float buf[1024];
  std::vector<float> heap;
  float* v = buf;
  if (k > 1024) {
    heap.resize(k);
    v = heap.data();
  }
  for (uint32_t i = 0; i < k; ++i) v[i] = x.ring[(x.head + o_.window - 1 - i) % o_.window];
  if (q != 0.5) {
    const uint32_t j = static_cast<uint32_t>(std::clamp(q, 0.0, 1.0) * (k - 1));
    std::nth_element(v, v + j, v + k);
    return v[j];
  }
  std::nth_element(v, v + k / 2, v + k);
  double hi = v[k / 2];
  if (k % 2 == 1) return hi;
  double lo = *std::max_element(v, v + k / 2);
  return 0.5 * (lo + hi);
}

void CusumHealthDetector::Observe(ExecutorId e, double ratio, Time now) {
  if (!(ratio > 0) || !std::isfinite(ratio)) return;
  Exec& x = m_[e];
  if (x.n == 0) x.st.since = now;
  const double v = std::clamp(std::log(ratio), -o_.clip, o_.clip);
  Push(x, static_cast<float>(v));
  ++x.n;
  ++x.in_state;
  x.fast += (x.n == 1 ? 1.0 : 0.2) * (v - x.fast);

  const NodeHealth prev_state = x.st.state;
  auto enter = [&](NodeHealth s) {
    x.st.state = s;
    x.st.since = now;
    x.in_state = 0;
  };
  const double margin = std::log1p(std::max(o_.margin, 0.0));
  const double slow_level = std::log(std::max(o_.fail_slow_factor, 1.0));

  if (x.st.state != NodeHealth::kFailSlow) {
    x.cusum = std::max(0.0, x.cusum + (v - x.baseline) - drift_);
    x.run = x.cusum > 0 ? x.run + 1 : 0;
  }
  switch (x.st.state) {
    case NodeHealth::kHealthy:
    case NodeHealth::kRecovered:
      if (x.cusum > o_.threshold) {
        enter(NodeHealth::kSuspect);
      } else {
        if (x.cusum < o_.threshold / 2) x.baseline += o_.baseline_alpha * (v - x.baseline);
        if (x.st.state == NodeHealth::kRecovered && now - x.st.since >= o_.recovered_hold_s)
          enter(NodeHealth::kHealthy);
        break;
      }
      [[fallthrough]];
    case NodeHealth::kSuspect: {
      if (x.cusum <= 0) {
        enter(NodeHealth::kHealthy);
        break;
      }
      const uint32_t post = std::min(x.run, o_.window);
      if (post >= o_.confirm_min) {
        // "The validate_quantile order statistic of the post-change samples is
        // >= bar" without sorting: at most floor(q (post-1)) samples below bar.
        const double bar = std::max(slow_level, x.baseline + margin);
        const uint32_t allowed = static_cast<uint32_t>(std::clamp(o_.validate_quantile, 0.0, 1.0) * (post - 1));
        uint32_t below = 0;
        for (uint32_t i = 0; i < post; ++i)
          below += x.ring[(x.head + o_.window - 1 - i) % o_.window] < bar;
        if (below <= allowed) enter(NodeHealth::kFailSlow);
      }
      break;
    }
    case NodeHealth::kFailSlow:
      if (x.in_state >= o_.recover_window) {
        const double med = MedianOfLast(x, o_.recover_window);
        if (med < std::max(std::log(std::max(o_.recover_factor, 1.0)), x.baseline + margin)) {
          enter(NodeHealth::kRecovered);
          x.cusum = 0;
          x.run = 0;
        }
      }
      break;
  }

  // Speed factor: the post-change level while suspect / fail-slow (median at
  // entry, then a fast EWMA: no sort per observation), else the fast EWMA.
  const NodeHealth now_state = x.st.state;
  if (now_state == NodeHealth::kSuspect || now_state == NodeHealth::kFailSlow) {
    if (now_state != prev_state) {
      x.level = MedianOfLast(x, std::max<uint32_t>(1, std::min(std::max(x.run, o_.confirm_min), o_.window)));
    } else {
      x.level += 0.2 * (v - x.level);
    }
    x.st.speed_factor = std::exp(x.level);
  } else {
    x.st.speed_factor = std::exp(x.fast);
  }
}

NodeHealthState CusumHealthDetector::State(ExecutorId e) const {
  auto it = m_.find(e);
  return it == m_.end() ? NodeHealthState{} : it->second.st;
}

double CusumHealthDetector::Cusum(ExecutorId e) const {
  auto it = m_.find(e);
  return it == m_.end() ? 0 : it->second.cusum;
}

double CusumHealthDetector::Baseline(ExecutorId e) const {
  auto it = m_.find(e);
  return it == m_.end() ? 0 : it->second.baseline;
}

}  // namespace tailcut
