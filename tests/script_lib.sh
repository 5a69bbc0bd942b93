# shellcheck shell=bash
# Shared by the shell tests (source it): a scratch folder `work`, a list
# `pids` of background processes killed at exit, and `fail MSG`, which
# prints MSG and the tail of every $work/*.log, then exits 1.
# Usage: source tests/script_lib.sh NAME   (NAME prefixes the folder and messages)
tc_name=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/tailcut-$tc_name-XXXXXX")
pids=()
# tc_on_kill CMD...: runs CMD (idempotent) if this test dies without its
# EXIT trap, as when ctest's timeout kills it; for what outlives its
# processes (daemons it started detached, packages it installed). A
# watcher process waits for the test's end; tc_stop_watchers (and
# tc_cleanup) end it when the test cleans up by itself.
tc_watchers=()
tc_on_kill() {
  # shellcheck disable=SC2016  # expanded by the watcher
  setsid bash -c 'while kill -0 "$0" 2>/dev/null; do sleep 1; done; "$@"' "$$" "$@" </dev/null >/dev/null 2>&1 &
  tc_watchers+=($!)
}
tc_stop_watchers() {
  for p in "${tc_watchers[@]}"; do kill "$p" 2>/dev/null || true; done
  tc_watchers=()
}
tc_cleanup() {
  tc_stop_watchers
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap tc_cleanup EXIT
# tc_port_base: a random port below the kernel's ephemeral range, where no
# outgoing connection can hold it, with it and the 9 after it bound by
# nothing on this machine now (/proc/net/tcp{,6}: another test's daemons).
# A range tuned to start below ~11,000 leaves no room: then 20000-39999 as before.
tc_pick_port_base() {
  local span used base i free
  span=$(($(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768) - 10010))
  used=" $(tail -q -n +2 /proc/net/tcp /proc/net/tcp6 2>/dev/null | while read -r _ local _; do
    printf '%d ' "$((16#${local##*:}))"
  done) "
  for _ in {1..50}; do
    if ((span >= 1000)); then base=$((10000 + RANDOM % span)); else base=$((20000 + RANDOM % 20000)); fi
    free=1
    for ((i = 0; i < 10; i++)); do [[ $used == *" $((base + i)) "* ]] && free=0; done
    ((free)) && break
  done
  echo "$base"
}
# shellcheck disable=SC2034  # read by the scripts that source this
tc_port_base=$(tc_pick_port_base)
fail() {
  echo "$tc_name test: $*" >&2
  for f in "$work"/*.log; do [[ -f $f ]] && { echo "== $f" >&2; tail -20 "$f" >&2; }; done
  exit 1
}
