#include "tailcut/sim/random.h"

#include <cmath>
#include <sstream>

namespace tailcut::sim {

Distribution Distribution::Constant(double v) {
  Distribution d;
  d.kind = Kind::kConstant;
  d.value = v;
  return d;
}
Distribution Distribution::Exponential(double mean) {
  Distribution d;
  d.kind = Kind::kExp;
  d.mean = mean;
  return d;
}

double Distribution::Sample(Rng& rng) const { return SampleBits(rng.Bits()); }

double Distribution::SampleBits(uint64_t bits, uint64_t task_bits) const {
  double x = SampleBitsUnstraggled(bits, task_bits);
  if (straggler_p > 0 && ToUnit(Mix(bits ^ 0xc2b2ae3d27d4eb4fULL)) < straggler_p) x *= straggler_factor;
  return x;
}

double Distribution::SampleBitsUnstraggled(uint64_t bits, uint64_t task_bits) const {
  if (kind == Kind::kEmpirical) {
    if (!values || values->empty()) return 0;
    const bool task = ToUnit(Mix(bits ^ 0x94d049bb133111ebULL)) < task_share;
    const double at = ToUnit(Mix(task ? task_bits : bits)) * static_cast<double>(values->size() - 1);
    const size_t i = static_cast<size_t>(at);
    const double lo = (*values)[i], hi = (*values)[std::min(i + 1, values->size() - 1)];
    return lo + (hi - lo) * (at - static_cast<double>(i));
  }
  double u1 = ToUnit(Mix(bits));
  double x = 0;
  switch (kind) {
    case Kind::kConstant: x = value; break;
    case Kind::kUniform: x = min + (max - min) * u1; break;
    case Kind::kExp: x = mean * UnitExp(u1); break;
    case Kind::kShiftedExp: x = shift + mean * UnitExp(u1); break;
    case Kind::kPareto: x = scale / std::pow(1.0 - u1, 1.0 / alpha); break;
    case Kind::kEmpirical: break;
    case Kind::kLognormal:
    case Kind::kBimodal:
      x = median * std::exp(sigma * UnitNormal(u1, ToUnit(Mix(bits ^ 0x5bd1e995ULL))));
      if (kind == Kind::kBimodal && ToUnit(Mix(task_bits ^ 0x27d4eb2f165667c5ULL)) < high_p) x *= high_factor;
      break;
  }
  return x < 0 ? 0 : x;
}

double Distribution::Min() const {
  double m = 0;
  switch (kind) {
    case Kind::kConstant: m = value; break;
    case Kind::kUniform: m = min; break;
    case Kind::kShiftedExp: m = shift; break;
    case Kind::kPareto: m = scale; break;
    case Kind::kExp:
    case Kind::kLognormal:
    case Kind::kBimodal: m = 0; break;
    case Kind::kEmpirical: m = values && !values->empty() ? values->front() : 0; break;
  }
  if (straggler_p > 0 && straggler_factor < 1) m *= straggler_factor;
  return m < 0 ? 0 : m;
}

double Distribution::Mean() const {
  double m = 0;
  switch (kind) {
    case Kind::kConstant: m = value; break;
    case Kind::kUniform: m = 0.5 * (min + max); break;
    case Kind::kExp: m = mean; break;
    case Kind::kShiftedExp: m = shift + mean; break;
    case Kind::kPareto: m = alpha > 1 ? alpha * scale / (alpha - 1) : INFINITY; break;
    case Kind::kLognormal: m = median * std::exp(0.5 * sigma * sigma); break;
    case Kind::kBimodal: m = median * std::exp(0.5 * sigma * sigma) * (1 - high_p + high_p * high_factor); break;
    case Kind::kEmpirical:
      for (double v : values ? *values : std::vector<double>()) m += v / static_cast<double>(values->size());
      break;
  }
  return m * (1 - straggler_p + straggler_p * straggler_factor);
}

double Distribution::Median() const {
  switch (kind) {
    case Kind::kConstant: return value;
    case Kind::kUniform: return 0.5 * (min + max);
    case Kind::kExp: return mean * std::log(2.0);
    case Kind::kShiftedExp: return shift + mean * std::log(2.0);
    case Kind::kPareto: return scale * std::pow(2.0, 1.0 / alpha);
    case Kind::kLognormal: return median;
    case Kind::kBimodal: return high_p < 0.5 ? median : median * high_factor;
    case Kind::kEmpirical: return values && !values->empty() ? (*values)[values->size() / 2] : 0;
  }
  return value;
}

std::string Distribution::Describe() const {
  std::ostringstream s;
  switch (kind) {
    case Kind::kConstant: s << "constant(" << value << ")"; break;
    case Kind::kUniform: s << "uniform(" << min << ", " << max << ")"; break;
    case Kind::kExp: s << "exp(mean " << mean << ")"; break;
    case Kind::kShiftedExp: s << shift << " + exp(mean " << mean << ")"; break;
    case Kind::kPareto: s << "pareto(x_m " << scale << ", alpha " << alpha << ")"; break;
    case Kind::kLognormal: s << "lognormal(median " << median << ", sigma " << sigma << ")"; break;
    case Kind::kBimodal:
      s << "bimodal(median " << median << ", sigma " << sigma << ", x" << high_factor << " w.p. " << high_p << ")";
      break;
    case Kind::kEmpirical:
      s << "empirical(" << (values ? values->size() : 0) << " values, task share " << task_share << ")";
      break;
  }
  if (straggler_p > 0) s << " x" << straggler_factor << " w.p. " << straggler_p;
  return s.str();
}

Status LoadDistribution(const Config& cfg, const std::string& key, Distribution* out) {
  if (!cfg.Has(key)) return Status::Ok();
  double bare = 0;
  if (!cfg.Has(key + ".dist")) {
    // A bare number: constant.
    Status s = cfg.Get(key, &bare);
    if (!s.ok()) return Status::InvalidArgument("'" + key + "' must be a number or a table with 'dist'");
    *out = Distribution::Constant(bare);
    return Status::Ok();
  }
  std::string name;
  Distribution d;
  TableReader t(cfg, key);
  t.Get("dist", &name).Get("value", &d.value).Get("min", &d.min).Get("max", &d.max).Get("mean", &d.mean);
  t.Get("shift", &d.shift).Get("scale", &d.scale).Get("alpha", &d.alpha).Get("median", &d.median);
  t.Get("sigma", &d.sigma).Get("straggler_p", &d.straggler_p).Get("straggler_factor", &d.straggler_factor);
  t.Get("high_p", &d.high_p).Get("high_factor", &d.high_factor);
  if (!t.status().ok()) return t.status();
  if (name == "constant") d.kind = Distribution::Kind::kConstant;
  else if (name == "uniform") d.kind = Distribution::Kind::kUniform;
  else if (name == "exp" || name == "exponential") d.kind = Distribution::Kind::kExp;
  else if (name == "shifted_exp") d.kind = Distribution::Kind::kShiftedExp;
  else if (name == "pareto") d.kind = Distribution::Kind::kPareto;
  else if (name == "lognormal") d.kind = Distribution::Kind::kLognormal;
  else if (name == "bimodal")
    d.kind = Distribution::Kind::kBimodal;
  else
    return Status::InvalidArgument("'" + key + ".dist' = '" + name +
                                   "': want constant, uniform, exp, shifted_exp, pareto, lognormal or bimodal");
  if (d.high_p < 0 || d.high_p > 1 || d.high_factor < 0)
    return Status::InvalidArgument("'" + key + "': bimodal needs high_p in [0, 1] and high_factor >= 0");
  if (d.kind == Distribution::Kind::kPareto && (d.alpha <= 0 || d.scale <= 0))
    return Status::InvalidArgument("'" + key + "': pareto needs alpha > 0 and scale > 0");
  if (d.straggler_p < 0 || d.straggler_p > 1) return Status::InvalidArgument("'" + key + ".straggler_p' must be in [0, 1]");
  if (d.mean < 0 || d.sigma < 0 || d.median < 0 || d.value < 0 || d.straggler_factor < 0)
    return Status::InvalidArgument("'" + key + "': parameters must be >= 0");
  *out = d;
  return Status::Ok();
}

}  // namespace tailcut::sim
