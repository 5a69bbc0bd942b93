#!/usr/bin/env bash
# Takeover soak for scheduler replicas (docs/RELIABILITY.md, "Replicas"):
# three tailcut-scheduler replicas on loopback and two executors given every
# replica's endpoint; N times, a job is submitted, and once it has commits
# the leader is lost: SIGKILL with its state_dir removed (a lost machine),
# or, the third of every five, SIGSTOP past the election timeout and resumed
# (it exits 3, deposed, and is started again on its disk); an executor is
# killed and restarted each time too. The time until a follower answers as
# leader is recorded; the lost replica is started again and must have the
# whole log before the next loss. Then every job must have succeeded and
# every replica's journal hold each task committed exactly once.
# scripts/chaos.sh --replicas 3 [SECONDS] runs the same for a duration.
#
#   scripts/replica-takeovers.sh        # 50 kills (~4 min)
#   scripts/replica-takeovers.sh 10     # 10 kills
# Env: BUILD (default build). ctest runs 3 kills (integration_replicas_test).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
test_bin=$BUILD/tests/integration/integration_replicas_test
[ -x "$test_bin" ] || { echo "build first: cmake --build $BUILD --target integration_replicas_test" >&2; exit 2; }
TAILCUT_REPLICA_KILLS=${1:-50} "$test_bin" "replicas: the leader killed and wiped again*" 2>&1 |
  grep -E "^replicas soak:|passed|failed|FAILED"
