#!/usr/bin/env bash
# The ARM64 executor under qemu-user against an x86-64 scheduler on loopback
# (docs/EDGE.md): starts the host's tailcut-scheduler, runs the cross-built
# build-arm64/bin/tailcut-executor with qemu-aarch64-static, submits a job
# with the host's CLI and requires it to succeed; prints the executor's idle
# RSS and threads as /proc shows them (under qemu-user that is the emulator
# process: qemu's own memory and threads are included).
# Env: ARM64_BUILD (default build-arm64); HOST_BIN (default: the first of
# build/bin, build-dev/bin, build-cuda/bin holding tailcut-scheduler and tailcut).
set -euo pipefail
cd "$(dirname "$0")/.."

ARM64_BUILD=${ARM64_BUILD:-build-arm64}
exe="$ARM64_BUILD/bin/tailcut-executor"
[[ -x $exe ]] || { echo "arm64-qemu-check: $exe missing; run scripts/cross-arm64.sh first" >&2; exit 2; }
command -v qemu-aarch64-static >/dev/null || { echo "arm64-qemu-check: qemu-aarch64-static missing (apt-get install qemu-user-static)" >&2; exit 2; }
if [[ -z ${HOST_BIN:-} ]]; then
  for d in build/bin build-dev/bin build-cuda/bin; do
    if [[ -x $d/tailcut-scheduler && -x $d/tailcut ]]; then HOST_BIN=$d; break; fi
  done
fi
[[ -n ${HOST_BIN:-} ]] || { echo "arm64-qemu-check: no host build with tailcut-scheduler and tailcut (run scripts/setup.sh)" >&2; exit 2; }

log=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

port=$((20000 + RANDOM % 20000))
"$HOST_BIN/tailcut-scheduler" --executor-endpoint "tcp://127.0.0.1:$port" \
  --client-endpoint "tcp://127.0.0.1:$((port + 1))" --set 'scheduler.state_dir=""' --http-listen '' >"$log/scheduler.log" 2>&1 &
pids+=($!)
qemu-aarch64-static -L / "$exe" --scheduler "tcp://127.0.0.1:$port" --name arm64-qemu --slots 4 \
  >"$log/executor.log" 2>&1 &
epid=$!
pids+=("$epid")

echo "== $(file -b "$exe" 2>/dev/null | cut -d, -f1-2 || echo "$exe")"
echo "== executor: qemu-aarch64-static -L / $exe --scheduler tcp://127.0.0.1:$port"
cli=("$HOST_BIN/tailcut")
for _ in $(seq 100); do
  "${cli[@]}" executors --scheduler "tcp://127.0.0.1:$((port + 1))" 2>/dev/null | grep -q arm64-qemu && break
  sleep 0.2
done
"${cli[@]}" executors --scheduler "tcp://127.0.0.1:$((port + 1))"
sleep 1  # idle, registered
rss_kb=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$epid/status")
threads=$(awk '$1 == "Threads:" { print $2 }' "/proc/$epid/status")
echo "== idle, registered: VmRSS $(awk -v k="$rss_kb" 'BEGIN { printf "%.1f", k / 1024 }') MiB, threads $threads" \
     "(qemu-aarch64-static process: the emulator's memory and threads included)"

# Split by mapping (/proc/PID/smaps): the guest's files (aarch64 libraries,
# the executable), anonymous read-write memory (the guest's heap and stacks,
# and some of qemu's), and what is qemu's alone (its binary, its [heap], the
# rwx translation buffer). Prints "files anon own" in KiB.
split() {
  awk -v qemu="$(command -v qemu-aarch64-static)" '
    /^[0-9a-f]+-[0-9a-f]+ / { perm = $2; path = $6; next }
    /^Rss:/ {
      if (path == qemu || path == "[heap]" || (path == "" && perm ~ /x/)) own += $2
      else if (path ~ /^\//) files += $2
      else anon += $2
    }
    END { print files + 0, anon + 0, own + 0 }' "/proc/$1/smaps"
}
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
read -r files anon own < <(split "$epid")
echo "== by mapping: guest files $(mib "$files") MiB, anonymous rw $(mib "$anon") MiB, qemu's own $(mib "$own") MiB"

# What qemu itself takes: the same measure for a trivial aarch64 program
# with as many threads as the executor, all sleeping (qemu keeps state per
# guest thread).
if command -v aarch64-linux-gnu-gcc >/dev/null &&
   printf '%s\n' '#include <pthread.h>' '#include <stdlib.h>' '#include <unistd.h>' \
     'static void* idle(void* a) { (void)a; sleep(30); return 0; }' \
     'int main(int c, char** v) { pthread_t t; for (int i = 1; i < atoi(v[1]); ++i) pthread_create(&t, 0, idle, 0);' \
     '  sleep(30); return 0; }' | aarch64-linux-gnu-gcc -x c - -pthread -o "$log/idle-arm64" 2>/dev/null; then
  qemu-aarch64-static -L / "$log/idle-arm64" "$threads" &
  bpid=$!
  pids+=("$bpid")
  sleep 1
  base_kb=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$bpid/status")
  read -r _ base_anon _ < <(split "$bpid")
  kill "$bpid" 2>/dev/null || true
  echo "== baseline: qemu-aarch64-static running a trivial aarch64 program ($threads threads): VmRSS $(mib "$base_kb") MiB," \
       "anonymous rw $(mib "$base_anon") MiB (qemu's, nearly all)"
  echo "== upper bound of the executor's own idle RSS on ARM64: guest files + anonymous rw - baseline's anonymous rw" \
       "= $(mib $((files + anon - base_anon))) MiB (the anonymous part still holds qemu's state for the threads" \
       "that ran code; natively the executor's anonymous memory is ~0.4 MiB on x86-64)"
fi

echo "== $HOST_BIN/tailcut submit --kernel sleep --args ms=20 --tasks 20 --wait"
set +e
"${cli[@]}" submit --kernel sleep --args ms=20 --tasks 20 --wait --timeout 120 \
  --scheduler "tcp://127.0.0.1:$((port + 1))"
rc=$?
set -e
if [[ $rc -ne 0 ]]; then
  echo "arm64-qemu-check: FAIL (submit exit $rc); executor log:"
  tail -20 "$log/executor.log"
  exit 1
fi
echo "arm64-qemu-check: PASS (job completed on the ARM64 executor under qemu)"
