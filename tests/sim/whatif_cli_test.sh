#!/usr/bin/env bash
# `tailcut whatif` end to end: a generated trace with one fail-slow
# executor names it first; --help; bad traces are usage errors naming the
# file and line. Usage: whatif_cli_test.sh PATH/TO/tailcut
set -euo pipefail
BIN=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$BIN" whatif --help | grep -q "usage: tailcut whatif" || fail "--help"
rc=0; "$BIN" whatif >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "no trace: exit $rc, want 2"

"$BIN" trace-gen --executors 8 --tasks 960 --job-size 16 --fail-slow-executor 3 --fail-slow-factor 4 \
  --seed 5 -o "$T/t.csv" >/dev/null
out=$("$BIN" whatif "$T/t.csv" --json --policy none 2>/dev/null)
echo "$out" | grep -q '"by_executor": \[{"name": "3"' || fail "executor 3 not first: $out"
"$BIN" whatif "$T/t.csv" --policy none --top 3 2>/dev/null | grep -q "top cause: executor 3" || fail "table"

printf 'job,task,executor,start,end,task_class\n1,0,1,5,4,a\n' >"$T/bad.csv"
rc=0; err=$("$BIN" whatif "$T/bad.csv" 2>&1 >/dev/null) || rc=$?
[ "$rc" = 2 ] || fail "bad trace: exit $rc, want 2"
echo "$err" | grep -q "bad.csv:2" || fail "bad trace error does not name file:line: $err"
rc=0; "$BIN" whatif "$T/missing.csv" >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "missing trace: exit $rc, want 2"
rc=0; "$BIN" whatif "$T/t.csv" --top x >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "--top x: exit $rc, want 2"
echo ok
