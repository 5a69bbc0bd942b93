#include "health_detector.h"

#include <algorithm>
#include <cmath>

namespace tailcut {

CusumHealthDetector::CusumHealthDetector(HealthOptions o) : o_(o) {
  o_.window = std::max<uint32_t>(o_.window, std::max({o_.confirm_min, o_.recover_window, o_.warmup}));
  o_.window = std::max<uint32_t>(o_.window, 1);
  drift_ = o_.drift > 0 ? o_.drift : std::log(std::max(o_.fail_slow_factor, 1.0 + 1e-6)) / 2;
  // Huber-style: a sample counts at most as much as a slowdown of
  // fail_slow_factor^2, so random stragglers weigh no more than a slow node's
  // typical task does.
  if (!(o_.clip > 0)) o_.clip = 2 * std::log(std::max(o_.fail_slow_factor, 1.0 + 1e-6));
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
  const double v = std::log(ratio);
  Push(x, static_cast<float>(v));
  ++x.n;
  ++x.in_state;

  const NodeHealth prev_state = x.st.state;
  auto enter = [&](NodeHealth s) {
    x.st.state = s;
    x.st.since = now;
    x.in_state = 0;
  };
  auto rebase = [&](uint32_t k) {  // the median of the last k samples is the node's own level
    x.baseline = MedianOfLast(x, k);
    x.scale = ScaleOfLast(x, k, x.baseline);
    x.baseline_n = k;
    x.cusum = x.cusum2 = 0;
    x.run = x.run2 = 0;
  };
  // The node's own level. Until `warmup` samples outside FAIL_SLOW it is
  // unknown: the CUSUM runs against the fleet's level (0) and only a node
  // beyond healthy_spread x fail_slow_factor is confirmed, so one slow from
  // its first task is caught but a healthy slower one is not. Then the
  // median of those samples (robust to stragglers), refined by a running
  // mean turning into an EWMA: a steadily slower node is its own reference
  // and only a change from it counts.
  if (x.baseline_n == 0 && x.st.state != NodeHealth::kFailSlow && ++x.warm >= o_.warmup) {
    rebase(o_.warmup);
    if (x.st.state == NodeHealth::kSuspect) enter(NodeHealth::kHealthy);
  }
  const bool known = x.baseline_n > 0;
  // The node's noise (robust sigma of its log ratios): the confirming CUSUM
  // counts evidence in log-likelihood units, so its false-alarm rate does not
  // depend on how noisy run times are; noisier nodes just take longer.
  const double scale = known ? x.scale : ScaleOfLast(x, std::min<uint64_t>(x.n, o_.warmup), MedianOfLast(x, o_.warmup));
  // Clipped relative to the node's own level: a straggler moves the CUSUM by
  // at most clip - drift, and one fast outlier cannot erase a real shift.
  const double dev = std::clamp(v - x.baseline, -o_.clip, o_.clip);
  x.fast += (x.n == 1 ? 1.0 : 0.2) * (x.baseline + dev - x.fast);
  const double floor_level = std::log1p(std::max(o_.margin, 0.0));
  const double change = std::log(std::max(o_.fail_slow_factor, 1.0));
  // The bar: a change of fail_slow_factor from the node's own level (and at
  // least (1 + margin) x the fleet's, so a fast node falling back to typical
  // speed is not fail-slow). Before the own level is known the reference is
  // the slowest healthy node's (healthy_spread x the fleet's).
  const double ref = known ? x.baseline : std::log(o_.healthy_spread);
  const double bar = std::max(ref + change, floor_level);

  double confirm_level = 0;
  if (x.st.state != NodeHealth::kFailSlow) {
    x.cusum = std::max(0.0, x.cusum + dev - drift_);
    x.run = x.cusum > 0 ? x.run + 1 : 0;
    // The confirming CUSUM, drift at the bar (r above the reference), so
    // pre-change samples pull it back to 0 and its run starts near the
    // change point. A sample counts at most top - r (Huber: clipped at a 2r
    // shift, or at 2 sigma on a noisy node so a big slowdown still counts
    // more), so a straggler weighs no more than a typical task of a slow node.
    const double r = bar - ref;
    const double top = std::max(2 * r, kHuberSigmas * scale);
    x.cusum2 = std::max(0.0, x.cusum2 + std::clamp(v - ref, -o_.clip, top) - r);
    x.run2 = x.cusum2 > 0 ? x.run2 + 1 : 0;
    // Its level: more than confirm_stragglers maximal samples (a cluster of
    // random stragglers cannot confirm alone) and confirm_threshold nats of
    // log-likelihood ratio (shift 2r vs none, Gaussian at the node's scale:
    // the factor is 2r / scale^2), so noisier run times need more evidence
    // and the false-alarm rate does not depend on how noisy they are.
    confirm_level = std::max((o_.confirm_stragglers + 0.25) * (top - r), o_.confirm_threshold * scale * scale / (2 * r));
  }
  // FAIL_SLOW: the confirming CUSUM is past confirm_level over at least
  // confirm_min samples, and the validate_quantile order statistic of its
  // run is >= bar (at most floor(q (k-1)) of the k samples below; no sort),
  // so a cluster of random stragglers cannot pass on their size alone.
  auto confirmed = [&] {
    const uint32_t k = std::min(x.run2, o_.window);
    if (x.cusum2 < confirm_level || k < o_.confirm_min) return false;
    const uint32_t allowed = static_cast<uint32_t>(std::clamp(o_.validate_quantile, 0.0, 1.0) * (k - 1));
    uint32_t below = 0;
    for (uint32_t i = 1; i <= k; ++i) below += x.ring[(x.head + o_.window - i) % o_.window] < bar;
    return below <= allowed;
  };
  switch (x.st.state) {
    case NodeHealth::kHealthy:
    case NodeHealth::kRecovered:
    case NodeHealth::kSuspect:
      if (confirmed()) {
        enter(NodeHealth::kFailSlow);
        break;
      }
      if (x.st.state != NodeHealth::kSuspect) {
        if (x.cusum > o_.threshold) {
          enter(NodeHealth::kSuspect);
          break;
        }
        if (known && x.cusum < o_.threshold / 2) {
          ++x.baseline_n;
          const double a = std::max(o_.baseline_alpha, 1.0 / x.baseline_n);
          x.baseline += a * dev;
          // The scale from the MAD of the last window (robust to stragglers,
          // unlike a mean of deviations), smoothed; amortised O(1).
          if (++x.since_scale >= o_.window) {
            x.since_scale = 0;
            x.scale += 0.25 * (ScaleOfLast(x, o_.window, x.baseline) - x.scale);
          }
        }
        if (x.st.state == NodeHealth::kRecovered && now - x.st.since >= o_.recovered_hold_s)
          enter(NodeHealth::kHealthy);
        break;
      }
      if (x.cusum <= 0) {
        enter(NodeHealth::kHealthy);
      } else if (known && x.in_state >= o_.window && MedianOfLast(x, o_.window) < bar) {
        // Suspect for a whole window without confirming, at a level below
        // the bar: a lasting mild shift (or a drifting prediction) is the
        // node's new own level, not a failure.
        rebase(o_.window);
        enter(NodeHealth::kHealthy);
      }
      break;
    case NodeHealth::kFailSlow:
      if (x.in_state >= o_.recover_window) {
        const double med = MedianOfLast(x, o_.recover_window);
        if (med < std::max(x.baseline + std::log(std::max(o_.recover_factor, 1.0)), floor_level)) {
          enter(NodeHealth::kRecovered);
          x.cusum = x.cusum2 = 0;
          x.run = x.run2 = 0;
        }
      }
      break;
  }

  // Speed factor: the post-change level while suspect / fail-slow (median at
  // entry, then a fast EWMA: no sort per observation), else the fast EWMA.
  const NodeHealth now_state = x.st.state;
  if (now_state == NodeHealth::kSuspect || now_state == NodeHealth::kFailSlow) {
    if (now_state != prev_state) {
      const uint32_t run = now_state == NodeHealth::kFailSlow ? x.run2 : x.run;
      x.level = MedianOfLast(x, std::max<uint32_t>(1, std::min(std::max(run, o_.confirm_min), o_.window)));
    } else {
      x.level += 0.2 * (x.baseline + dev - x.level);
    }
    x.st.speed_factor = std::exp(x.level);
  } else {
    x.st.speed_factor = std::exp(x.fast);
  }
}

// 1.4826 x the median absolute deviation from `center` of the last k
// samples (sigma for a normal), at least kMinScale.
double CusumHealthDetector::ScaleOfLast(const Exec& x, uint64_t k, double center) const {
  k = std::min<uint64_t>(k, x.size);
  if (k < 3) return kDefaultScale;
  float v[1024];
  for (uint32_t i = 0; i < k; ++i) v[i] = std::abs(x.ring[(x.head + o_.window - 1 - i) % o_.window] - static_cast<float>(center));
  std::nth_element(v, v + k / 2, v + k);
  return std::max(kMinScale, 1.4826 * v[k / 2]);
}

NodeHealthState CusumHealthDetector::State(ExecutorId e) const {
  const Exec* x = m_.Find(e);
  return x ? x->st : NodeHealthState{};
}

double CusumHealthDetector::Cusum(ExecutorId e) const {
  const Exec* x = m_.Find(e);
  return x ? x->cusum : 0;
}

double CusumHealthDetector::Baseline(ExecutorId e) const {
  const Exec* x = m_.Find(e);
  return x ? x->baseline : 0;
}

}  // namespace tailcut
