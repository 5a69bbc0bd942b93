#!/usr/bin/env bash
# A few hundred hollow executors (tailcut-swarm) against a real scheduler:
# they register, heartbeat and run a no-op job and a fan-out job end to end
# (the swarm exits 1 when a job does not succeed), and the scheduler
# stretches their heartbeat interval as the fleet grows (ctest swarm_*).
# Usage: swarm_test.sh BIN_DIR [POLICY]
set -euo pipefail
bin=$1
policy=${2:-default}
# shellcheck source=tests/script_lib.sh
source "$(dirname "$0")/../script_lib.sh" swarm

base=$tc_port_base
ex=tcp://127.0.0.1:$base cl=tcp://127.0.0.1:$((base + 1))
# heartbeat_rate 500: from 200 executors on the fleet is told 400 ms, twice
# heartbeat_ms (the stretch is under test too).
"$bin/tailcut-scheduler" --executor-endpoint "$ex" --client-endpoint "$cl" --http-listen '' --policy "$policy" \
  --set 'scheduler.state_dir=""' --set scheduler.heartbeat_rate=500 >"$work/scheduler.log" 2>&1 &
pids+=($!)
sched=$!
"$bin/tailcut-swarm" --scheduler "$ex" --executors 300 --slots 2 --processes 2 --threads 2 \
  --fail-slow-fraction 0.01 --client "$cl" --scheduler-pid "$sched" --idle-s 1 \
  --noop-tasks 20000 --fanout 5:100:20 >"$work/swarm.log" 2>&1 || fail "swarm failed: $(cat "$work/swarm.log")"
cat "$work/swarm.log"
grep -q '^registered: 300 executors' "$work/swarm.log" || fail "not all 300 registered"
grep -Eq '^noop 20000 tasks: JOB_SUCCEEDED' "$work/swarm.log" || fail "the no-op job"
grep -Eq '^fanout 5 jobs x 100 tasks' "$work/swarm.log" || fail "the fan-out jobs"
# Every hollow executor ran and reported: the two processes' result counts
# add up to at least the tasks.
results=$(awk '/^swarm process/ { for (i = 1; i < NF; ++i) if ($(i + 1) == "results,") n += $i } END { print n + 0 }' \
  "$work/swarm.log")
((results >= 20500)) || fail "only $results results reported for 20500 tasks"
grep -q 'heartbeat interval up to 400 ms' "$work/swarm.log" || fail "the hollow executors were not told 400 ms"
grep -q 'heartbeat interval 200 -> 400 ms' "$work/scheduler.log" || fail "the scheduler did not retune heartbeats"
echo "swarm test ($policy): ok"
