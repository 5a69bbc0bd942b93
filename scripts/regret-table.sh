#!/usr/bin/env bash
# Prints the regret table of docs/benchmarks/matrix.md ("The regret table", issue
# 39): on the 64 matrix shapes and every shipped scenario but datacenter,
# `default` against `none` and the best fixed shipped policy at p50, p99 and
# p99.9, with extra work; then how many shapes hold each target.
# Deterministic: the same build prints the same table on any machine
# (9 simulations per shape; two processes, matrix and scenarios).
#
#   scripts/regret-table.sh            # the table on stdout
#   scripts/regret-table.sh --write    # ... and into docs/benchmarks/matrix.md, between its markers
# Env: BUILD (default build), POLICY (the entry judged, default "default"),
# SET (one config override for every shape, e.g.
# SET=policies.selector.candidates=late,hedge@quantile=0.9,none).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
TEST=$BUILD/tests/sim/sim_test
[ -x "$TEST" ] || { echo "build first: cmake --build $BUILD --target sim_test" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { TAILCUT_REGRET_POLICY=${POLICY:-default} TAILCUT_REGRET_SET=${SET:-} TAILCUT_REGRET_SHAPE=$1 "$TEST" "[.regret-table]" 2>/dev/null; }
# Matrix shapes are m00..m63; every other shape is a scenario file.
run m >"$tmp/m" &
m=$!
TAILCUT_REGRET_SKIP_MATRIX=1 run "" >"$tmp/s"
wait $m
table=$( (sed -n '/^| shape/,/^Matrix: /p' "$tmp/m"; echo; sed -n '/^|---/,/^Scenarios: /p' "$tmp/s" | tail -n +2) )
[ -n "$table" ] || { echo "no table: run $TEST \"[.regret-table]\" to see why" >&2; exit 1; }
if [ "${1:-}" = "--write" ]; then
  python3 - docs/benchmarks/matrix.md "$table" <<'PY'
import sys
path, table = sys.argv[1], sys.argv[2]
text = open(path).read()
begin, end = "<!-- regret-table begin -->", "<!-- regret-table end -->"
a, b = text.index(begin) + len(begin), text.index(end)
open(path, "w").write(text[:a] + "\n" + table + "\n" + text[b:])
PY
fi
printf '%s\n' "$table"
