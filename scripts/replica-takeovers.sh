#!/usr/bin/env bash
# Takeover soak for scheduler replicas (docs/RELIABILITY.md, "Replicas"):
# three tailcut-scheduler replicas on loopback and two executors given every
# replica's endpoint; N times, a job is submitted, and once it has commits
# the leader gets SIGKILL and its state_dir is removed (a lost machine); the
# time until a follower answers as leader is recorded, the wiped replica is
# restarted and waits until it has the whole log. Then every job must have
# succeeded and every replica's journal hold each task committed exactly once.
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
