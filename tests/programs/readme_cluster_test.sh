#!/usr/bin/env bash
# README.md's "Running a cluster" block, taken from README.md itself, run
# as written against a loopback cluster on free ports: the only changes are
# the ones the README tells its reader to make (SCHED_HOST, the ports), and
# 'tcp://*' becomes 'tcp://127.0.0.1' (tests listen on loopback only).
# Every command must succeed (bash -e), and the scripts-facing output must
# be what scripts expect (status --json: numeric ids).
# Usage: readme_cluster_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
source "$src/tests/script_lib.sh" readme_cluster

block=$(awk '/^## Running a cluster/ {on = 1; next}
             on && /^## / {exit}
             on && /^```sh/ {inside = 1; next}
             inside && /^```/ {exit}
             inside {print}' "$src/README.md")
[[ -n $block ]] || fail "no sh block under '## Running a cluster' in README.md"
grep -q "export TAILCUT_SCHEDULER=" <<<"$block" || fail "the block does not set TAILCUT_SCHEDULER"
if grep -E "^build/bin/tailcut (submit|status|executors|cancel|results)" <<<"$block" | grep -q -- "--scheduler"; then
  fail "a CLI command in the block carries --scheduler: TAILCUT_SCHEDULER is set once"
fi

# Free loopback ports, one per default port the block uses.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
script=$block
for default in 7700 7701 7780; do
  grep -q "$default" <<<"$block" || continue
  port=$(free_port)
  script=${script//$default/$port}
done
script=${script//SCHED_HOST/127.0.0.1}
script=${script//tcp:\/\/\*/tcp://127.0.0.1}

# The README's paths are relative to a checkout with a build: give it one.
mkdir -p "$work/run/build"
ln -s "$bin" "$work/run/build/bin"
ln -s "$src/configs" "$work/run/configs"
cat >"$work/run/cluster.sh" <<EOF
set -euo pipefail
trap 'kill \$(jobs -p) 2>/dev/null; wait' EXIT
$script
EOF
cd "$work/run"
unset TAILCUT_SCHEDULER TAILCUT_KEY_FILE TAILCUT_SCHEDULER_KEY
if ! timeout 150 bash "$work/run/cluster.sh" >"$work/out.log" 2>"$work/err.log"; then
  fail "the README's cluster block failed:
$(tail -20 "$work/out.log")"
fi
grep -q '"job_id":1,' "$work/out.log" || fail "status 1 --json: no numeric job_id:
$(cat "$work/out.log")"
grep -q "succeeded, 100/100 tasks committed" "$work/out.log" || fail "the fan-out submit did not succeed"
grep -q "do not add it to trusted_keys" "$work/out.log" || fail "keygen --role admin: no word on the scheduler's own key"
echo "readme_cluster: the block ran ($(wc -l <<<"$block") lines)"
