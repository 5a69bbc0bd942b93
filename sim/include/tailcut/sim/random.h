// The simulator's random quantities (Distribution), drawn with the common
// seeded RNG (tailcut/common/random.h: Rng, Mix), identical on every
// standard library.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tailcut/common/config.h"
#include "tailcut/common/random.h"
#include "tailcut/common/status.h"

namespace tailcut::sim {

// A non-negative random quantity described in TOML as a table:
//   { dist = "exp", mean = 1.0, straggler_p = 0.05, straggler_factor = 5 }
// dist: constant (value) | uniform (min, max) | exp (mean) |
//       shifted_exp (shift, mean: shift + Exp(mean)) |
//       pareto (scale = x_m, alpha; mean = alpha x_m / (alpha - 1)) |
//       lognormal (median, sigma: median * exp(sigma N)) |
//       bimodal (median, sigma, high_p, high_factor: the lognormal, times
//       high_factor with probability high_p; two kinds of task in one class,
//       part of the task's nature, so not a straggler: the healthy twin and
//       the online reference keep it).
// Straggler mixture on top of any of them: with probability straggler_p the
// value is multiplied by straggler_factor.
struct Distribution {
  enum class Kind { kConstant, kUniform, kExp, kShiftedExp, kPareto, kLognormal, kBimodal, kEmpirical };
  Kind kind = Kind::kConstant;
  double value = 1.0;   // constant
  double min = 0, max = 1;  // uniform
  double mean = 1.0;    // exp, shifted_exp (of the exponential part)
  double shift = 0;     // shifted_exp
  double scale = 1.0;   // pareto x_m
  double alpha = 2.0;   // pareto shape
  double median = 1.0;  // lognormal
  double sigma = 0.5;   // lognormal, bimodal
  double high_p = 0;    // bimodal: share of the high mode
  double high_factor = 1;  // bimodal: the high mode's multiple of median
  double straggler_p = 0;
  double straggler_factor = 1;
  // empirical (built in code, by the `default` selector's replays: no TOML
  // form): a draw is read off the sorted `values` (linear between them);
  // with probability task_share an attempt reuses its task's draw (every
  // attempt of the task is as long), else it draws afresh.
  std::shared_ptr<const std::vector<double>> values;
  double task_share = 0;

  static Distribution Constant(double v);
  static Distribution Exponential(double mean);
  // Draws one value from two uniforms u1, u2 in [0, 1) and a third for the
  // straggler coin (counter-based callers pass Mix-ed bits).
  double Sample(Rng& rng) const;
  double SampleBits(uint64_t bits) const { return SampleBits(bits, bits); }  // deterministic in `bits`
  // `task_bits`: the bits every attempt of one task shares (the simulator
  // passes its first attempt's): bimodal's mode is the task's, so a long
  // task is long on every try and a copy of it cannot win.
  double SampleBits(uint64_t bits, uint64_t task_bits) const;
  // The same draw without the straggler mixture's factor: what the attempt
  // would take had it not straggled (the clairvoyant bound's task time).
  double SampleBitsUnstraggled(uint64_t bits) const { return SampleBitsUnstraggled(bits, bits); }
  double SampleBitsUnstraggled(uint64_t bits, uint64_t task_bits) const;
  // The least value it can take (0 where unbounded below); the bound's
  // network delay.
  double Min() const;
  double Mean() const;
  // The median without the straggler mixture (the online reference's unit);
  // bimodal: the mode holding the median (the low one when high_p < 0.5).
  double Median() const;
  std::string Describe() const;
};

// Reads a distribution at `key` (a table with `dist`), or a bare number
// meaning constant. Absent: leaves *out unchanged.
Status LoadDistribution(const Config& cfg, const std::string& key, Distribution* out);

}  // namespace tailcut::sim
