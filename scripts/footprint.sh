#!/usr/bin/env bash
# Idle footprint of tailcut-executor (docs/EXECUTOR.md "Footprint"): starts
# each given executor binary, registered with a tailcut-scheduler on
# loopback when one sits next to it (else pointed at a port nobody listens
# on), waits, then prints VmRSS, VmHWM and Threads from /proc/PID/status and
# whether any CUDA library is linked (ldd) or mapped (/proc/PID/maps).
# Usage: scripts/footprint.sh [--max-mib N] [--wait S] EXECUTOR...
#        (default: build/bin/tailcut-executor)
# With --max-mib, exits 1 when an executor's VmRSS is N MiB or more.
set -euo pipefail

max_mib="" wait_s=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --max-mib) max_mib=$2; shift 2 ;;
    --wait) wait_s=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[[ $# -gt 0 ]] || set -- "$(cd "$(dirname "$0")/.." && pwd)/build/bin/tailcut-executor"

status=0
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

field() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$2/status"; }  # kB or a count

for exe in "$@"; do
  [[ -x $exe ]] || { echo "footprint: $exe: not an executable" >&2; exit 2; }
  port=$((20000 + RANDOM % 20000))
  sched="$(dirname "$exe")/tailcut-scheduler"
  mode="no scheduler (tcp://127.0.0.1:$port unreachable)"
  spid=""
  if [[ -x $sched ]]; then
    "$sched" --executor-endpoint "tcp://127.0.0.1:$port" --client-endpoint "tcp://127.0.0.1:$((port + 1))" \
      --set 'scheduler.state_dir=""' --http-listen '' --log-level warn >/dev/null 2>&1 &
    spid=$!
    pids+=("$spid")
    mode="registered with $(basename "$sched") on tcp://127.0.0.1:$port"
  fi
  "$exe" --scheduler "tcp://127.0.0.1:$port" --log-level warn >/dev/null 2>&1 &
  epid=$!
  pids+=("$epid")
  sleep "$wait_s"
  if ! kill -0 "$epid" 2>/dev/null; then
    echo "footprint: $exe exited early" >&2
    exit 2
  fi
  rss_kb=$(field VmRSS "$epid")
  hwm_kb=$(field VmHWM "$epid")
  threads=$(field Threads "$epid")
  linked=$(ldd "$exe" 2>/dev/null | grep -oE 'lib(cuda|cudart|cublas|cublasLt|nvidia-ml)[^ ]*\.so[^ ]*' | sort -u |
           tr '\n' ' ' || true)
  mapped=$(grep -oE 'lib(cuda|cudart|cublas|cublasLt|nvidia-ml|tailcut_cuda)[^/ ]*\.so[^/ ]*$' "/proc/$epid/maps" |
           sort -u | tr '\n' ' ' || true)
  kill "$epid" 2>/dev/null || true
  wait "$epid" 2>/dev/null || true
  if [[ -n $spid ]]; then kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true; fi
  pids=()
  rss_mib=$(awk -v k="$rss_kb" 'BEGIN { printf "%.1f", k / 1024 }')
  hwm_mib=$(awk -v k="$hwm_kb" 'BEGIN { printf "%.1f", k / 1024 }')
  verdict=""
  if [[ -n $max_mib ]]; then
    if awk -v k="$rss_kb" -v m="$max_mib" 'BEGIN { exit !(k >= m * 1024) }'; then
      verdict="  FAIL (>= $max_mib MiB)"
      status=1
    else
      verdict="  ok (< $max_mib MiB)"
    fi
  fi
  echo "$exe: idle ${wait_s}s, $mode"
  echo "  VmRSS ${rss_mib} MiB  VmHWM ${hwm_mib} MiB  threads ${threads}$verdict"
  echo "  CUDA libraries linked: ${linked:-none}; mapped: ${mapped:-none}"
done
exit $status
