#!/bin/bash
#SBATCH --job-name=tailcut-batch
#SBATCH --ntasks=4
#SBATCH --cpus-per-task=4
#SBATCH --time=1:00:00
#SBATCH --output=tailcut-batch-%j.log
# A tailcut cluster for one batch of work inside one Slurm allocation
# (docs/DEPLOY.md): the scheduler on the batch host (the allocation's first
# node), one executor per task (srun, the task's CPUs as its slots), then
# COMMAND with $TAILCUT_SCHEDULER, $TAILCUT_KEY_FILE and
# $TAILCUT_SCHEDULER_KEY set, so `tailcut submit` and the Python Client
# find the cluster by themselves. When COMMAND ends the executors and the
# scheduler stop, and the job ends with COMMAND's exit status.
#
#   sbatch [--ntasks N] [--cpus-per-task S] [...] scripts/slurm-batch.sh COMMAND [ARGS...]
#   sbatch --ntasks 16 --cpus-per-task 8 scripts/slurm-batch.sh python3 my_batch.py
#
# The daemons come from $TAILCUT_BIN (sbatch passes the environment on),
# else PATH. Fresh CURVE keys for this allocation go to
# $SLURM_SUBMIT_DIR/.tailcut-JOBID (a folder every node must see; removed at
# the end); the scheduler logs to tailcut-batch-JOBID-scheduler.log there. Ports: $TAILCUT_PORT and the next one (default from the job id,
# 20000-59998); the scheduler binds every address (keys make that safe),
# the executors reach it at $TAILCUT_HOST (default: the batch host's name).
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: sbatch [options] slurm-batch.sh COMMAND [ARGS...]" >&2; exit 2; }
[[ -n ${SLURM_JOB_ID:-} ]] || { echo "slurm-batch: not in a Slurm allocation (submit it with sbatch)" >&2; exit 2; }
bin=${TAILCUT_BIN:-}
tool() { if [[ -n $bin ]]; then echo "$bin/$1"; else command -v "$1" || echo "$1"; fi; }
scheduler=$(tool tailcut-scheduler) executor=$(tool tailcut-executor) cli=$(tool tailcut)
for exe in "$scheduler" "$executor" "$cli"; do
  [[ -x $exe ]] || { echo "slurm-batch: $exe not found (set TAILCUT_BIN or PATH)" >&2; exit 2; }
done

port=${TAILCUT_PORT:-$((20000 + (SLURM_JOB_ID % 20000) * 2))}
host=${TAILCUT_HOST:-$(hostname)}
out=${SLURM_SUBMIT_DIR:-$PWD}
keys=$out/.tailcut-$SLURM_JOB_ID
pids=()
finish() {
  # Executors first (they say goodbye), then the scheduler; then the keys.
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$keys"
}
trap finish EXIT

(umask 077 && mkdir -p "$keys")
for k in "scheduler admin" "node executor" "batch client"; do
  read -r name role <<<"$k"
  "$cli" keygen "$name" --role "$role" --dir "$keys" >/dev/null
done
cat "$keys/node.pub" "$keys/batch.pub" >"$keys/trusted.toml"

"$scheduler" --executor-endpoint "tcp://*:$port" --client-endpoint "tcp://*:$((port + 1))" --http-listen "" \
  --key-file "$keys/scheduler.key" --trusted-keys "$keys/trusted.toml" --set 'scheduler.state_dir=""' \
  >"$out/tailcut-batch-$SLURM_JOB_ID-scheduler.log" 2>&1 &
pids+=($!)
# One executor per task, as scripts/slurm-executors.sh starts them.
# shellcheck disable=SC2016  # expanded by each task, on its node
srun --kill-on-bad-exit=0 bash -c 'exec "$@" --slots "${SLURM_CPUS_PER_TASK:-1}" --name "slurm-$SLURM_JOB_ID-$SLURM_PROCID"' \
  executor "$executor" --scheduler "tcp://$host:$port" --key-file "$keys/node.key" --scheduler-key "$keys/scheduler.pub" &
pids+=($!)

export TAILCUT_SCHEDULER=tcp://$host:$((port + 1)) TAILCUT_KEY_FILE=$keys/batch.key TAILCUT_SCHEDULER_KEY=$keys/scheduler.pub
# Wait for every executor (bounded: a node that cannot reach the batch host
# would hang the allocation otherwise).
want=${SLURM_NTASKS:-1} seen=0
for _ in $(seq 1200); do
  seen=$("$cli" executors --json 2>/dev/null | grep -o '"name":"slurm-' | wc -l || true)
  ((seen >= want)) && break
  sleep 0.1
done
((seen >= want)) || { echo "slurm-batch: $seen of $want executors registered within 120 s" >&2; exit 1; }
echo "slurm-batch: $want executors registered with $TAILCUT_SCHEDULER; running: $*"
rc=0
"$@" || rc=$?
echo "slurm-batch: $1 exited $rc; stopping the cluster"
exit "$rc"
