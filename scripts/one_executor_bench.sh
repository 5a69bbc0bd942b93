#!/usr/bin/env bash
# One executor, many no-ops through the CLI (issue 41, docs/SCALE.md "One
# executor"): a scheduler with the journal on (a fresh state_dir) and one
# executor daemon on loopback, then `tailcut submit --kernel noop --tasks N
# --wait` RUNS times, printing each run's wall time, tasks/s, and the CPU
# time the scheduler process spent on it per task (user + system, from
# /proc: steadier than wall time on a loaded machine).
#
#   scripts/one_executor_bench.sh BIN CHAIN [TASKS [RUNS [SLOTS]]]
#     BIN: the build's bin folder; CHAIN: none, default, ...; TASKS default
#     100000, RUNS 3, SLOTS 4. JOURNAL=0: no state_dir (in memory).
#     PERF_DATA=FILE: the scheduler under `perf record ${PERF_ARGS:--g}`.
#     SYSCALLS=1: the scheduler's system calls per task over the measured
#     runs (`perf stat` on syscall tracepoints, Debian's linux-perf): loop
#     wake-ups (poll), the I/O thread's (epoll_wait), socket reads and
#     writes, the journal's writes and syncs.
#     CLI=PATH: the `tailcut` that submits (default BIN/tailcut), e.g. to
#     drive another build's daemons with this one's client.
set -euo pipefail
bin=$1 chain=$2 tasks=${3:-100000} runs=${4:-3} slots=${5:-4}
cli=${CLI:-$bin/tailcut}
# shellcheck source=tests/script_lib.sh
source "$(dirname "$0")/../tests/script_lib.sh" one  # work, pids (killed at exit), tc_port_base
base=$tc_port_base
ex=tcp://127.0.0.1:$base cl=tcp://127.0.0.1:$((base + 1))
state="\"$work/state\""
[[ ${JOURNAL:-1} == 0 ]] && state='""'
"$bin/tailcut-scheduler" --executor-endpoint "$ex" --client-endpoint "$cl" --http-listen '' --policy "$chain" \
  --log-level warn --set "scheduler.state_dir=$state" >"$work/scheduler.log" 2>&1 &
sched=$!
pids+=("$sched")
"$bin/tailcut-executor" --scheduler "$ex" --slots "$slots" --name one --log-level warn >"$work/executor.log" 2>&1 &
exec_pid=$!
pids+=("$exec_pid")
if [[ -n ${PERF_DATA:-} ]]; then
  perf record ${PERF_ARGS:--g} -q -o "$PERF_DATA" -p "$sched" 2>"$work/perf.log" &
  perf_pid=$!
fi
# A warm-up job: the executor is registered and every lazy start is done.
if ! "$cli" submit --scheduler "$cl" --kernel noop --tasks 100 --wait >"$work/warmup.log" 2>&1; then
  echo "one_executor_bench: the warm-up job failed:" >&2
  tail -n 5 "$work/warmup.log" "$work/scheduler.log" "$work/executor.log" >&2
  exit 1
fi
echo "== $chain, journal $([[ $state == '""' ]] && echo off || echo on), 1 executor x $slots slots, $tasks no-ops," \
  "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
# A process's CPU ticks so far (utime + stime, /proc/PID/stat fields 14-15).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
if [[ ${SYSCALLS:-0} == 1 ]]; then
  events=poll,epoll_wait,recvfrom,sendto,read,write,pwrite64,fdatasync,fsync
  perf stat -x, -o "$work/syscalls.csv" -e "$(sed 's/[a-z_0-9]*/syscalls:sys_enter_&/g' <<<"$events")" -p "$sched" &
  stat_pid=$!
  sleep 0.2
fi
for ((r = 1; r <= runs; ++r)); do
  c0=$(cpu_ticks "$sched") e0=$(cpu_ticks "$exec_pid")
  t0=$(date +%s.%N)
  "$cli" submit --scheduler "$cl" --kernel noop --tasks "$tasks" --wait >"$work/run.log" 2>&1 ||
    { echo "one_executor_bench: run $r failed:" >&2; tail -n 5 "$work/run.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  c1=$(cpu_ticks "$sched") e1=$(cpu_ticks "$exec_pid")
  awk -v a="$t0" -v b="$t1" -v n="$tasks" -v r="$r" -v c=$((c1 - c0)) -v e=$((e1 - e0)) -v hz="$hz" 'BEGIN {
    printf "run %d: %.3f s, %.0f tasks/s; CPU per task: scheduler %.2f us, executor %.2f us\n",
      r, b - a, n / (b - a), 1e6 * c / hz / n, 1e6 * e / hz / n }'
done
if [[ -n ${stat_pid:-} ]]; then
  kill -INT "$stat_pid"
  wait "$stat_pid" || true
  awk -F, -v n=$((tasks * runs)) '$3 ~ /syscalls/ { sub(/syscalls:sys_enter_/, "", $3); printf "%s %.3f/task  ", $3, $1 / n }
    END { print "(scheduler, all threads)" }' "$work/syscalls.csv"
fi
if [[ -n ${perf_pid:-} ]]; then kill -INT "$perf_pid"; wait "$perf_pid" || true; fi
grep -iE "error|lost" "$work/scheduler.log" | head -5 || true
