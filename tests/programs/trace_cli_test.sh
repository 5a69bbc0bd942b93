#!/usr/bin/env bash
# `tailcut trace JOB` against live daemons: the job's rows come back as a
# trace that `tailcut whatif` reads, naming the slow executor as the top
# cause; a job with no rows held is an error (ctest cli_trace).
# Usage: trace_cli_test.sh BIN_DIR
set -euo pipefail
bin=$1
# shellcheck source=tests/script_lib.sh
source "$(dirname "$0")/../script_lib.sh" trace

base=$tc_port_base
ex=tcp://127.0.0.1:$base cl=tcp://127.0.0.1:$((base + 1))
start_scheduler() {  # extra --set flags
  "$bin/tailcut-scheduler" --executor-endpoint "$ex" --client-endpoint "$cl" --http-listen '' \
    --set 'scheduler.state_dir=""' --set 'policies.chain="none"' "$@" >>"$work/scheduler.log" 2>&1 &
  scheduler=$!
  pids+=($scheduler)
}
start_scheduler
"$bin/tailcut-executor" --scheduler "$ex" --slots 2 --name fast >"$work/fast.log" 2>&1 &
pids+=($!)
"$bin/tailcut-executor" --scheduler "$ex" --slots 2 --name slow --slowdown 5 >"$work/slow.log" 2>&1 &
pids+=($!)
"$bin/tailcut" submit --kernel sleep --args ms=20 --tasks 24 --wait --scheduler "$cl" >"$work/submit.log" 2>&1 ||
  fail "the job failed"

"$bin/tailcut" trace 1 --scheduler "$cl" -o "$work/t.csv" 2>"$work/trace.log" || fail "trace failed"
[[ $(grep -c '^1,' "$work/t.csv") == 24 ]] || fail "not 24 rows: $(cat "$work/t.csv")"
grep -q '^# executor [0-9]* = slow$' "$work/t.csv" || fail "no executor names: $(head -5 "$work/t.csv")"
"$bin/tailcut" whatif "$work/t.csv" --policy none >"$work/whatif.log" 2>&1 || fail "whatif failed"
grep -q '^top cause: executor [0-9]* = slow ' "$work/whatif.log" || fail "the slow executor is not the top cause"

# trace_fails JOB PATTERN: `tailcut trace JOB` exits 1 saying PATTERN.
trace_fails() {
  local rc=0
  "$bin/tailcut" trace "$1" --scheduler "$cl" >/dev/null 2>"$work/error.log" || rc=$?
  [[ $rc == 1 ]] && grep -q "$2" "$work/error.log" || fail "trace $1: exit $rc, $(cat "$work/error.log")"
}
trace_fails 99 'no job 99'

# With the ring off, a finished job has no rows: exit 1, saying why.
kill "$scheduler"
wait "$scheduler" 2>/dev/null || true
start_scheduler --set scheduler.trace_memory_rows=0
"$bin/tailcut" submit --kernel noop --tasks 4 --wait --scheduler "$cl" --timeout 30 >"$work/submit2.log" 2>&1 ||
  fail "the second job failed"
trace_fails 1 'trace_memory_rows = 0'
echo "trace test: 24 rows, top cause named, errors clear"
