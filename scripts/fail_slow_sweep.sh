#!/usr/bin/env bash
# Fail-slow detection on generated "realistic" traces (docs/benchmarks/tail.md,
# "Fail-slow on realistic traces"): 16 executors with healthy speeds spread
# over 0.8..1.2, input sizes log-uniform 1..100, Gamma(SHAPE) run-time noise,
# 4% random 3-8x stragglers, executor (seed % 16) + 1 turning 2.5x slow at
# 15000 s. Prints one line per seed and a summary per predictor.
#
#   scripts/fail_slow_sweep.sh [FIRST_SEED LAST_SEED [SHAPE [PREDICTORS]]]
# Defaults: seeds 1..6, shape 9, predictors "regression quantile".
# Env: BUILD (default build), OUT (trace folder, default a temporary one).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
first=${1:-1} last=${2:-6} shape=${3:-9} predictors=${4:-"regression quantile"}
for t in tailcut-trace-gen tailcut-predict-eval; do
  [ -x "$BUILD/bin/$t" ] || { echo "build first: cmake --build $BUILD --target $t" >&2; exit 2; }
done
out=${OUT:-$(mktemp -d)}
[ -n "${OUT:-}" ] || trap 'rm -rf "$out"' EXIT
mkdir -p "$out"
for seed in $(seq "$first" "$last"); do
  "$BUILD/bin/tailcut-trace-gen" --executors 16 --tasks 20000 --speed-spread 0.2 --skew 100 \
    --gamma-shape "$shape" --straggler-prob 0.04 --fail-slow-executor $((seed % 16 + 1)) \
    --fail-slow-onset 15000 --fail-slow-factor 2.5 --seed "$seed" -o "$out/realistic-$seed.csv"
  for p in $predictors; do
    "$BUILD/bin/tailcut-predict-eval" "$out/realistic-$seed.csv" --predictor "$p" --json > "$out/$p-$seed.json"
  done
done
python3 - "$out" "$first" "$last" "$predictors" <<'PY'
import json, sys
out, first, last, predictors = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split()
for p in predictors:
    delays, missed, fa, healthy = [], 0, 0, 0
    for seed in range(first, last + 1):
        r = json.load(open("%s/%s-%d.json" % (out, p, seed)))["fail_slow"]
        ep = r["episodes"][0]
        d = ep["delay_tasks"] if ep["detected"] else None
        print("%s seed %d executor %d: %s, %d false alarms over %d healthy tasks" % (
            p, seed, ep["executor"], "flagged after %d tasks" % d if d is not None else "NOT flagged",
            r["false_alarms"], r["healthy_tasks"]))
        if d is None:
            missed += 1
        else:
            delays.append(d)
        fa += r["false_alarms"]
        healthy += r["healthy_tasks"]
    delays.sort()
    within = sum(d <= 10 for d in delays)
    print("%s: seeds %d-%d: flagged within 10 tasks in %d of %d, missed %d, delay median %s max %s; "
          "%d false alarms over %d healthy tasks" % (
              p, first, last, within, last - first + 1, missed,
              delays[len(delays) // 2] if delays else "-", delays[-1] if delays else "-", fa, healthy))
PY
