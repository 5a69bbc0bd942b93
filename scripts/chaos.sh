#!/usr/bin/env bash
# Chaos soak (docs/RELIABILITY.md): jobs stream through a local cluster
# (the real tailcut-scheduler and 4 tailcut-executor daemons) while a random
# executor is killed -9 every few seconds and the scheduler every ~20 s,
# each restarted; then the journal and the clients' records are checked.
#
#   scripts/chaos.sh                 # 10 minutes
#   scripts/chaos.sh 120             # 2 minutes
#   scripts/chaos.sh --rogue-edge    # 10 minutes, and an edge that takes
#                                    # real work and never runs it
#   scripts/chaos.sh --replicas 3 [SECONDS]   # three scheduler replicas
#       (docs/RELIABILITY.md, "Replicas"): the leader lost over and over,
#       each time mid-job (SIGKILL with its state_dir wiped, or SIGSTOP past
#       the election timeout), an executor killed each time; takeover
#       p50/p99, lost and committed twice (integration_replicas_test's soak)
# Env: BUILD (default build), TAILCUT_CHAOS_EXECUTOR_KILL_S (default 2),
# TAILCUT_CHAOS_SCHEDULER_KILL_S (default 20 for runs of 2 minutes or more).
# ctest runs a 30-second version (chaos_test, label "chaos").
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
if [[ ${1:-} == --replicas ]]; then
  [[ ${2:-} == 3 ]] || { echo "chaos.sh: --replicas 3 is the group built (three replicas)" >&2; exit 2; }
  test_bin=$BUILD/tests/integration/integration_replicas_test
  [ -x "$test_bin" ] || { echo "build first: cmake --build $BUILD --target integration_replicas_test" >&2; exit 2; }
  TAILCUT_REPLICA_SECONDS=${3:-600} "$test_bin" "replicas: the leader killed and wiped again*" 2>&1 |
    grep -E "^replicas soak:|passed|failed|FAILED"
  exit "${PIPESTATUS[0]}"
fi
rogue_edge=0
if [[ ${1:-} == --rogue-edge ]]; then
  rogue_edge=1
  shift
fi
test_bin=$BUILD/tests/integration/chaos_test
[ -x "$test_bin" ] || { echo "build first: cmake --build $BUILD --target chaos_test" >&2; exit 2; }
TAILCUT_CHAOS_ROGUE_EDGE=$rogue_edge TAILCUT_CHAOS_SECONDS=${1:-600} "$test_bin" 2>&1 | grep -E "^chaos( \(output_dir\))?:|passed|failed|FAILED"
