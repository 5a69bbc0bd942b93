#!/usr/bin/env bash
# `tailcut submit --wait` with stderr to a file (not a terminal): plain
# progress lines, no bar, no \r (ctest cli_progress_plain).
# Usage: progress_cli_test.sh BIN_DIR
set -euo pipefail
bin=$1
# shellcheck source=tests/script_lib.sh
source "$(dirname "$0")/../script_lib.sh" progress

base=$tc_port_base
ex=tcp://127.0.0.1:$base cl=tcp://127.0.0.1:$((base + 1))
"$bin/tailcut-scheduler" --executor-endpoint "$ex" --client-endpoint "$cl" --http-listen '' \
  --set 'scheduler.state_dir=""' >"$work/scheduler.log" 2>&1 &
pids+=($!)
"$bin/tailcut-executor" --scheduler "$ex" --slots 2 >"$work/executor.log" 2>&1 &
pids+=($!)
"$bin/tailcut" submit --kernel sleep --args ms=20 --tasks 20 --wait --scheduler "$cl" \
  >"$work/stdout.log" 2>"$work/progress.log" || fail "the job failed"
! grep -q $'\r' "$work/progress.log" || fail "a carriage return (the terminal bar) in piped output"
line='^job 1: [0-9]+/20 tasks committed \([0-9]+\.[0-9]%\), [0-9]+ copies, [0-9]+\.[0-9] s elapsed(, ETA [0-9]+\.[0-9] s)?$'
while IFS= read -r l; do
  [[ $l =~ $line ]] || fail "not a progress line: '$l'"
done <"$work/progress.log"
head -1 "$work/progress.log" | grep -Eq '^job 1: 0/20 tasks committed \(0\.0%\), 0 copies' ||
  fail "the first line: $(head -1 "$work/progress.log")"
[[ $(grep -c '20/20 tasks committed (100.0%)' "$work/progress.log") == 1 ]] ||
  fail "the final line, once: $(cat "$work/progress.log")"
grep -q 'succeeded, 20/20 tasks committed' "$work/stdout.log" || fail "the status: $(cat "$work/stdout.log")"
echo "progress test: $(wc -l <"$work/progress.log") plain lines"
