#!/usr/bin/env bash
# Starts N tailcut executors on a Slurm cluster with one command: one
# sbatch job of N tasks, each task an executor (srun) with the task's CPUs
# as its slots, named slurm-JOBID-RANK (docs/DEPLOY.md). `scancel JOBID`
# stops them (SIGTERM: each says goodbye, the scheduler requeues its work).
#
#   scripts/slurm-executors.sh N --scheduler tcp://HOST:7700 [options] [-- executor flags]
#
# options:
#   --scheduler EP        the scheduler's executor endpoint (required)
#   --slots S             CPUs per executor (sbatch --cpus-per-task; default 4)
#   --gpus G              GPUs per executor (sbatch --gpus-per-task; default 0)
#   --time T              time limit (sbatch --time; default 1-00:00:00)
#   --partition P         sbatch --partition
#   --account A           sbatch --account
#   --key-file F          the executors' key (role executor; docs/SECURITY.md)
#   --scheduler-key F     the scheduler's public key
#   --executor PATH       tailcut-executor on a path every node sees
#                         (default: the one on PATH, else next to this script's build/bin)
#   --dry-run             print the batch script instead of submitting it
#   after --               flags passed to every executor (e.g. --allow-shell)
set -euo pipefail

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }

[[ $# -ge 1 ]] || usage
case $1 in -h|--help) usage 0 ;; esac
n=$1; shift
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "slurm-executors: N must be a positive integer, got '$n'" >&2; exit 2; }

scheduler="" slots=4 gpus=0 time_limit="1-00:00:00" partition="" account="" key="" scheduler_key="" dry=0
exe=$(command -v tailcut-executor || true)
[[ -n $exe ]] || exe="$(cd "$(dirname "$0")/.." && pwd)/build/bin/tailcut-executor"
extra=()
while [[ $# -gt 0 ]]; do
  need() { [[ $# -ge 2 ]] || { echo "slurm-executors: $1 needs a value" >&2; exit 2; }; }
  case $1 in
    --scheduler) need "$@"; scheduler=$2; shift 2 ;;
    --slots) need "$@"; slots=$2; shift 2 ;;
    --gpus) need "$@"; gpus=$2; shift 2 ;;
    --time) need "$@"; time_limit=$2; shift 2 ;;
    --partition) need "$@"; partition=$2; shift 2 ;;
    --account) need "$@"; account=$2; shift 2 ;;
    --key-file) need "$@"; key=$2; shift 2 ;;
    --scheduler-key) need "$@"; scheduler_key=$2; shift 2 ;;
    --executor) need "$@"; exe=$2; shift 2 ;;
    --dry-run) dry=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) usage 0 ;;
    *) echo "slurm-executors: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -n $scheduler ]] || { echo "slurm-executors: --scheduler tcp://HOST:PORT is required" >&2; exit 2; }
[[ $slots =~ ^[1-9][0-9]*$ ]] || { echo "slurm-executors: --slots must be a positive integer" >&2; exit 2; }
[[ $gpus =~ ^[0-9]+$ ]] || { echo "slurm-executors: --gpus must be an integer" >&2; exit 2; }
if { [[ -n $key ]] && [[ -z $scheduler_key ]]; } || { [[ -z $key ]] && [[ -n $scheduler_key ]]; }; then
  echo "slurm-executors: --key-file and --scheduler-key go together" >&2
  exit 2
fi

# The executor's command line, quoted once for the batch script.
cmd=("$exe" --scheduler "$scheduler")
[[ -n $key ]] && cmd+=(--key-file "$key" --scheduler-key "$scheduler_key")
cmd+=("${extra[@]}")
quoted=$(printf '%q ' "${cmd[@]}")

script="#!/bin/bash
#SBATCH --job-name=tailcut-executors
#SBATCH --ntasks=$n
#SBATCH --cpus-per-task=$slots
#SBATCH --time=$time_limit
#SBATCH --output=tailcut-executors-%j.log"
[[ $gpus -gt 0 ]] && script+=$'\n'"#SBATCH --gpus-per-task=$gpus"
[[ -n $partition ]] && script+=$'\n'"#SBATCH --partition=$partition"
[[ -n $account ]] && script+=$'\n'"#SBATCH --account=$account"
# One executor per task; a task that exits does not end the others
# (--kill-on-bad-exit=0). Slots and name come from the task's own
# environment, so the expansion happens on the node (single quotes).
script+="
# Stop them all: scancel \$SLURM_JOB_ID
srun --kill-on-bad-exit=0 bash -c 'exec \"\$@\" --slots \"\$SLURM_CPUS_PER_TASK\" --name \"slurm-\$SLURM_JOB_ID-\$SLURM_PROCID\"' executor $quoted"

if ((dry)); then
  printf '%s\n' "$script"
  exit 0
fi
command -v sbatch >/dev/null || { echo "slurm-executors: sbatch not found (is this a Slurm login node?)" >&2; exit 1; }
[[ -x $exe ]] || echo "slurm-executors: warning: $exe is not executable here; it must be on every node" >&2
printf '%s\n' "$script" | sbatch --parsable | {
  read -r job
  echo "slurm-executors: job $job: $n executors ($slots slots each) for $scheduler; stop them with: scancel $job"
}
