#!/usr/bin/env bash
# Runs `tailcut sim` and `tailcut bench` (live) for the straggler scenarios
# and prints markdown tables (docs/benchmarks/live.md, "Live: policy comparison").
#
#   scripts/bench-all.sh                    # all scenarios, default policies
#   POLICIES=none,default scripts/bench-all.sh healthy fail_slow
#   BUILD=build-rel SKIP_SIM=1 scripts/bench-all.sh
#
# Env: BUILD (build dir, default build), POLICIES (default
# none,spark,hedge,predictive,default), SEED (default: each scenario's),
# SKIP_SIM / SKIP_LIVE (=1 to skip one side), LIVE_MODEL=1 (simulate the
# [live] section instead of the full-size scenario), JOBS (live.jobs override).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
TAILCUT=${TAILCUT:-$BUILD/bin/tailcut}
POLICIES=${POLICIES:-none,spark,hedge,predictive,default}
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -eq 0 ] && SCENARIOS=(healthy random_stragglers fail_slow heavy_tail executor_crash)
[ -x "$TAILCUT" ] || { echo "build first: make -C $BUILD tailcut tailcut-executor" >&2; exit 2; }
extra=()
[ -n "${SEED:-}" ] && extra+=(--seed "$SEED")

table() {  # JSON array on stdin -> markdown table
  python3 -c '
import json, sys
rows = json.load(sys.stdin)
print("| policy | jobs | mean s | p50 s | p90 s | p99 s | p99.9 s | extra work | copies | p50 / bound | p99 / bound | extra machine |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    f = lambda v: "n/a" if v is None else ("%.4f" % v if v < 1 else "%.3f" % v)
    x = lambda v: "-" if v is None else "%.2f" % v
    note = (" (%d unfinished)" % r["unfinished"]) if r["unfinished"] else ""
    bound = r["policy"] == "bound"  # the clairvoyant bound, last (docs/benchmarks/tail.md)
    print("| %s | %d%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % ("*bound*" if bound else r["policy"], r["jobs"],
          note, f(r["mean"]), f(r["p50"]), f(r["p90"]), f(r["p99"]), f(r["p999"]),
          "-" if bound else "%.1f%%" % (100 * (r["extra_work"] or 0)), "-" if bound else r["copies"],
          x(r["p50_x_bound"]), x(r["p99_x_bound"]),
          "-" if r["extra_machine"] is None else "%+.1f%%" % (100 * r["extra_machine"])))
'
}

for s in "${SCENARIOS[@]}"; do
  f=configs/scenarios/$s.toml
  [ -f "$f" ] || f=$s
  if [ "${SKIP_SIM:-0}" != 1 ]; then
    lm=(); [ "${LIVE_MODEL:-0}" = 1 ] && lm=(--live-model)
    echo "### $s: simulator"
    echo
    echo "\`$TAILCUT sim $f --policy $POLICIES ${lm[*]} ${extra[*]}\`"
    echo
    "$TAILCUT" sim "$f" --policy "$POLICIES" "${lm[@]}" "${extra[@]}" --json | table
    echo
  fi
  if [ "${SKIP_LIVE:-0}" != 1 ]; then
    jobs=(); [ -n "${JOBS:-}" ] && jobs=(--jobs "$JOBS")
    echo "### $s: live"
    echo
    echo "\`$TAILCUT bench $f --policy $POLICIES ${jobs[*]} ${extra[*]}\`"
    echo
    "$TAILCUT" bench "$f" --policy "$POLICIES" "${jobs[@]}" "${extra[@]}" --json | table
    echo
  fi
done
