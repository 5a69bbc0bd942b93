#!/usr/bin/env bash
# The fleet-scale figures of docs/benchmarks/dispatch.md ("Fleet scale"): one
# scheduler daemon, hollow executors from tailcut-swarm (or real executor
# daemons with --real), idle CPU over IDLE_S seconds, then the jobs given.
# Usage: scripts/fleet_bench.sh BIN_DIR CHAIN EXECUTORS SLOTS [--real | --restart] -- SWARM_ARGS...
#   e.g. scripts/fleet_bench.sh build/bin default 10000 4 -- --idle-s 10 --noop-tasks 1000000
# SCHEDULER_SET="key=value" is one more --set for the scheduler (e.g.
# policies.selector.replay=false: `default` without its replays).
# LOST_AFTER_S (default 10, the default config says 2) is core.lost_after_s:
# on a machine shared with other builds a process may wait seconds for a
# core, which a 2 s timeout reads as executors lost (and their attempts
# rerun). At 10,000 executors heartbeat_rate stretches it past 10 s anyway.
# --restart (docs/SCALE.md): a restart under a connected fleet instead of
#   jobs: the scheduler (journal on) is killed with SIGKILL once all have
#   registered, started again on the same endpoints, and the time until
#   all are registered again is printed.
#
# The scaling curve (docs/SCALE.md): scripts/fleet_bench.sh BIN_DIR --sweep
#   runs none and default at 20, 200, 1,000, 3,000 and 10,000 executors x 4
#   slots (FLEET_SIZES overrides) with SWEEP_ARGS (below) and writes
#   docs/fleet_scale.{csv,svg} (FLEET_OUT=DIR elsewhere), one log per run
#   beside them in FLEET_OUT/fleet_scale_logs/.
#
# `none` against `default`, interleaved (issue 41, docs/SCALE.md "Placement
# at scale"): scripts/fleet_bench.sh BIN_DIR --ab ROUNDS EXECUTORS SLOTS
#   [--real] -- SWARM_ARGS... runs both chains ROUNDS times each, alternating
#   (which goes first swaps every round), and prints per chain the medians of
#   the no-op jobs' wall, tasks/s and scheduler CPU per task, then default /
#   none. 200 real executors, 100,000 no-ops:
#     scripts/fleet_bench.sh build/bin --ab 3 200 1 --real -- --noop-tasks 100000
set -euo pipefail
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in
  -h | --help) usage; exit 0 ;;
esac
need=4
[[ ${2:-} == --sweep ]] && need=1
[[ ${2:-} == --ab ]] && need=5
if (($# < need)); then
  usage >&2
  exit 2
fi
if [[ ${2:-} == --ab ]]; then
  bin=$1 rounds=$3 n=$4 slots=$5
  shift 5
  log=$(mktemp)
  trap 'rm -f "$log"' EXIT
  for ((r = 1; r <= rounds; ++r)); do
    order=(none default)
    ((r % 2)) || order=(default none)
    for chain in "${order[@]}"; do
      "$0" "$bin" "$chain" "$n" "$slots" "$@" 2>&1 | grep -E "^(==|noop|registered)" | sed "s/^/$chain round $r: /" |
        tee -a "$log"
    done
  done
  echo "== load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
  python3 - "$log" <<'PY'
import collections, re, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"(\w+) round \d+: noop (\d+) tasks: \w+ in (\S+) s = \d+ tasks/s; .* = (\S+)% of tasks; "
                 r"scheduler (\S+)% of a core", line)
    if m:
        tasks, wall, extra, pct = int(m[2]), float(m[3]), float(m[4]), float(m[5])
        runs[m[1]].append((wall, tasks / wall, pct / 100 * wall / tasks * 1e6, extra))
med = {}
for chain, rs in sorted(runs.items()):
    med[chain] = [statistics.median(r[i] for r in rs) for i in range(4)]
    w, t, c, e = med[chain]
    print(f"{chain:8} median of {len(rs)}: wall {w:.3f} s, {t:,.0f} tasks/s, scheduler CPU {c:.2f} us per task, "
          f"restarts+copies {e:.3f}% (walls: {', '.join(f'{r[0]:.3f}' for r in rs)})")
if "none" in med and "default" in med:
    print(f"default / none: wall {med['default'][0] / med['none'][0]:.3f}x, tasks/s {med['default'][1] / med['none'][1]:.3f}x, "
          f"CPU per task {med['default'][2] / med['none'][2]:.3f}x")
PY
  exit 0
fi
if [[ ${2:-} == --sweep ]]; then
  bin=$1
  out=${FLEET_OUT:-$(dirname "$0")/../docs}
  logs=$out/fleet_scale_logs
  mkdir -p "$logs"
  args=${SWEEP_ARGS:---fail-slow-fraction 0.01 --idle-s 5 --noop-tasks 100000 --fanout 10:1000:50}
  for n in ${FLEET_SIZES:-20 200 1000 3000 10000}; do
    for chain in none default; do
      procs=$(((n + 2499) / 2500))
      # shellcheck disable=SC2086
      "$0" "$bin" "$chain" "$n" 4 -- --processes "$procs" $args 2>&1 | grep -v WARN >"$logs/$chain-$n.log" || true
      grep -E "^(==|registered|idle|noop|fanout)" "$logs/$chain-$n.log" || true
    done
  done
  python3 "$(dirname "$0")/fleet_curve.py" "$out/fleet_scale.svg" "$out/fleet_scale.csv" "$logs"/*.log
  echo "wrote $out/fleet_scale.svg and $out/fleet_scale.csv"
  exit 0
fi
bin=$1 chain=$2 n=$3 slots=$4
shift 4
real=0 restart=0
if [[ ${1:-} == --real ]]; then real=1; shift; fi
if [[ ${1:-} == --restart ]]; then restart=1; shift; fi
[[ ${1:-} == -- ]] && shift
# shellcheck source=tests/script_lib.sh
source "$(dirname "$0")/../tests/script_lib.sh" fleet  # work, pids (killed at exit), tc_port_base
base=$tc_port_base
ex=tcp://127.0.0.1:$base cl=tcp://127.0.0.1:$((base + 1))
ulimit -n "$(ulimit -Hn)"
state='""'
((restart)) && state="\"$work/state\""
start_scheduler() {
  "$bin/tailcut-scheduler" --executor-endpoint "$ex" --client-endpoint "$cl" --http-listen '' --policy "$chain" \
    --log-level warn --set "scheduler.state_dir=$state" --set scheduler.max_executors=20000 \
    --set core.lost_after_s="${LOST_AFTER_S:-10}" ${SCHEDULER_SET:+--set "$SCHEDULER_SET"} >>"$work/scheduler.log" 2>&1 &
  sched=$!
  pids+=("$sched")
}
start_scheduler
# PERF_DATA=FILE: the scheduler under `perf record ${PERF_ARGS:--g}` for the whole run
# (docs/SCALE.md); the swarm is not recorded.
if [[ -n ${PERF_DATA:-} ]]; then
  perf record ${PERF_ARGS:--g} -q -o "$PERF_DATA" -p "$sched" 2>"$work/perf.log" &
  perf_pid=$!
fi
echo "== $chain, $n $( ((real)) && echo real executor daemons || echo hollow executors) x $slots slots, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
procs=$(((n + 2999) / 3000))
if ((restart)); then
  "$bin/tailcut-swarm" --scheduler "$ex" --executors "$n" --slots "$slots" --processes "$procs" --threads 2 \
    --duration-s 600 "$@" >"$work/swarm.log" 2>&1 &
  pids+=($!)
  # The swarm as a driver only, with one hollow executor of its own: wait
  # for all of them.
  wait_for() {
    "$bin/tailcut-swarm" --scheduler "$ex" --executors 1 --name-prefix "counter-$1" --client "$cl" \
      --wait-executors $((n + 1)) | grep '^registered'
  }
  wait_for before
  kill -KILL "$sched"
  wait "$sched" 2>/dev/null || true
  t0=$(date +%s.%N)
  start_scheduler
  wait_for after
  echo "after the restart: all $n registered again $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }") s after the new scheduler started"
elif ((real)); then
  for ((i = 0; i < n; ++i)); do
    "$bin/tailcut-executor" --scheduler "$ex" --slots "$slots" --threads 1 --name "real-$i" --log-level warn \
      >/dev/null 2>&1 &
    pids+=($!)
  done
  # The swarm as the driver only: zero hollow executors is not allowed, so
  # one, and wait for all of them.
  "$bin/tailcut-swarm" --scheduler "$ex" --executors 1 --client "$cl" --scheduler-pid "$sched" \
    --wait-executors $((n + 1)) "$@"
else
  "$bin/tailcut-swarm" --scheduler "$ex" --executors "$n" --slots "$slots" --processes "$procs" --threads 2 \
    --client "$cl" --scheduler-pid "$sched" "$@"
fi
if [[ -n ${perf_pid:-} ]]; then kill -INT "$perf_pid"; wait "$perf_pid" || true; fi
grep -iE "error|lost" "$work/scheduler.log" | head -5 || true
