"""Shared by the Python benchmarks: percentiles and bootstrap confidence
intervals (standard library only)."""

import random


def percentile(values, p):
    """The p-th percentile (0..100), linear between order statistics."""
    values = sorted(values)
    k = (len(values) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def bootstrap_ci(values, statistic, level=0.95, resamples=2000, seed=1):
    """(low, high): the `level` percentile bootstrap interval of
    statistic(values), from `resamples` resamples with replacement (a
    fixed seed: the same data gives the same interval)."""
    rng = random.Random(seed)
    n = len(values)
    stats = sorted(statistic([values[rng.randrange(n)] for _ in range(n)]) for _ in range(resamples))
    tail = (1 - level) / 2 * 100
    return percentile(stats, tail), percentile(stats, 100 - tail)


def ci_text(values, statistic, scale=1.0, fmt="{:,.1f}"):
    """'value [low, high]' of statistic(values), each times `scale`."""
    low, high = bootstrap_ci(values, statistic)
    return f"{fmt.format(statistic(values) * scale)} [{fmt.format(low * scale)}, {fmt.format(high * scale)}]"
