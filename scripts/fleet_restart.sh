#!/usr/bin/env bash
# A scheduler restart under a connected fleet (docs/SCALE.md): N hollow
# executors register, the scheduler is killed (SIGKILL) and started again
# on the same endpoints, and the time until all N are registered again is
# printed. Usage: scripts/fleet_restart.sh BIN_DIR N [CHAIN]
set -euo pipefail
bin=$1 n=$2 chain=${3:-default}
work=$(mktemp -d "${TMPDIR:-/tmp}/tailcut-restart-XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
base=$((20000 + RANDOM % 20000))
ex=tcp://127.0.0.1:$base cl=tcp://127.0.0.1:$((base + 1))
ulimit -n "$(ulimit -Hn)"
start_scheduler() {
  "$bin/tailcut-scheduler" --executor-endpoint "$ex" --client-endpoint "$cl" --http-listen '' --policy "$chain" \
    --log-level warn --set "scheduler.state_dir=\"$work/state\"" --set scheduler.max_executors=20000 \
    --set core.lost_after_s="${LOST_AFTER_S:-10}" >>"$work/scheduler.log" 2>&1 &
  sched=$!
  pids+=("$sched")
}
# Waits for `want` executors: the swarm as a driver, with one hollow
# executor of its own (it counts it).
wait_for() {
  "$bin/tailcut-swarm" --scheduler "$ex" --executors 1 --name-prefix "counter-$1" --client "$cl" \
    --wait-executors "$2" | grep '^registered'
}
echo "== $chain, $n hollow executors, restart, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
start_scheduler
procs=$(((n + 2499) / 2500))
"$bin/tailcut-swarm" --scheduler "$ex" --executors "$n" --slots 4 --processes "$procs" --threads 2 --duration-s 600 \
  >"$work/swarm.log" 2>&1 &
pids+=($!)
wait_for before $((n + 1))
kill -KILL "$sched"
wait "$sched" 2>/dev/null || true
t0=$(date +%s.%N)
start_scheduler
wait_for after $((n + 1))
echo "after the restart: all $n registered again $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }") s after the new scheduler started"
