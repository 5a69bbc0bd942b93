#!/usr/bin/env bash
# Reproduces docs/dashboard.png: a local scheduler (policies clone,spark)
# and 4 executors, one fail-slow and one with random delays, run a demo-like
# workload; headless chromium then screenshots the dashboard mid-run.
# Usage: scripts/dashboard-screenshot.sh [BIN_DIR (build/bin)] [OUT (docs/dashboard.png)]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/bin} out=${2:-docs/dashboard.png}
browser=$(command -v chromium || command -v chromium-browser) || { echo "needs chromium" >&2; exit 2; }
# shellcheck source=tests/script_lib.sh
source tests/script_lib.sh screenshot

base=$tc_port_base
ex=tcp://127.0.0.1:$base cl=tcp://127.0.0.1:$((base + 1)) http=127.0.0.1:$((base + 2))
"$bin/tailcut-scheduler" --executor-endpoint "$ex" --client-endpoint "$cl" --http-listen "$http" \
  --policy clone,spark --set 'scheduler.state_dir=""' >"$work/scheduler.log" 2>&1 &
pids+=($!)
flags=([1]="" [2]="" [3]="--delay-prob 0.1 --delay-ms 400" [4]="--slowdown 3")
for i in 1 2 3 4; do
  # shellcheck disable=SC2086  # the flags split on purpose
  "$bin/tailcut-executor" --scheduler "$ex" --slots 4 --name "worker-$i" ${flags[$i]} >"$work/executor$i.log" 2>&1 &
  pids+=($!)
done
submit() { "$bin/tailcut" submit --kernel sleep --scheduler "$cl" "$@" >/dev/null 2>&1; }
sleep 1
# One task size throughout: the health detector compares each executor
# with the others on the same kernel, so only worker-4 turns fail-slow.
for j in $(seq 1 6); do
  submit --args "ms=100 sigma=0.3" --tasks $((8 + j * 8)) --name "fanout-$j" --wait
done
submit --args "ms=100" --tasks 6 --name "small-clone" --wait
# Two jobs still running when the picture is taken.
submit --args "ms=100 sigma=0.3" --tasks 400 --name "training-epoch" &
pids+=($!)
submit --args "ms=100 sigma=0.3" --tasks 300 --name "etl-batch" &
pids+=($!)
sleep 3
"$browser" --headless --disable-gpu --no-sandbox --no-first-run --user-data-dir="$work/profile" --hide-scrollbars \
  --virtual-time-budget=3000 --window-size=1280,900 --screenshot="$out" "http://$http/" >"$work/chromium.log" 2>&1 ||
  fail "chromium failed"
echo "wrote $out"
