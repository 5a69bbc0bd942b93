#!/usr/bin/env bash
# Prints the do-no-harm matrix of docs/benchmarks/matrix.md ("The do-no-harm
# matrix", issue 31): 64 seeded shapes, each under none, default and the
# online reference, with its healthy twin's p99 and the ratios, then how many
# shapes hold each criterion. Deterministic: the same build prints the same
# table on any machine (~1 minute; 11 simulations per shape).
#
#   scripts/matrix-table.sh                 # the table on stdout
#   scripts/matrix-table.sh --write         # ... and into docs/benchmarks/matrix.md, between its markers
#   scripts/matrix-table.sh --dump DIR      # every shape (and its healthy twin) as a scenario file for tailcut sim
# Env: BUILD (default build), POLICY (the entry judged, default "default").
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
TEST=$BUILD/tests/sim/sim_test
[ -x "$TEST" ] || { echo "build first: cmake --build $BUILD --target sim_test" >&2; exit 2; }
if [ "${1:-}" = "--dump" ]; then
  [ -n "${2:-}" ] || { echo "usage: $0 --dump DIR" >&2; exit 2; }
  mkdir -p "$2"
  TAILCUT_MATRIX_DIR=$2 "$TEST" "[.matrix-dump]" >/dev/null
  echo "wrote $(ls "$2" | wc -l) scenario files to $2"
  exit 0
fi
table=$(TAILCUT_MATRIX_POLICY=${POLICY:-default} "$TEST" "[.matrix-table]" 2>/dev/null | sed -n '/^| shape/,/^[0-9]* shapes, /p')
[ -n "$table" ] || { echo "no table: run $TEST \"[.matrix-table]\" to see why" >&2; exit 1; }
if [ "${1:-}" = "--write" ]; then
  python3 - docs/benchmarks/matrix.md "$table" <<'PY'
import sys
path, table = sys.argv[1], sys.argv[2]
text = open(path).read()
begin, end = "<!-- matrix-table begin -->", "<!-- matrix-table end -->"
a, b = text.index(begin) + len(begin), text.index(end)
open(path, "w").write(text[:a] + "\n" + table + "\n" + text[b:])
PY
fi
printf '%s\n' "$table"
