#!/usr/bin/env bash
# scripts/slurm-executors.sh without Slurm (ctest slurm_executors_script):
# the batch script it would submit, run with a stand-in srun that runs its
# command once as task 0 of job 42, must start the executor command with
# the scheduler, keys, extra flags, the task's CPUs as slots and a
# per-task name, each argument intact (spaces included).
set -euo pipefail
src=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/tailcut-slurm-XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "slurm test: $*" >&2; exit 1; }

# The "executor" prints its arguments one per line.
# shellcheck disable=SC2016  # these scripts expand when they run
printf '#!/bin/sh\nfor a in "$@"; do echo "[$a]"; done\n' >"$work/fake-executor"
# srun: drop its own options, run the command as one task.
# shellcheck disable=SC2016
printf '#!/bin/sh\nwhile [ "${1#--}" != "$1" ]; do shift; done\nexec "$@"\n' >"$work/srun"
chmod +x "$work/fake-executor" "$work/srun"

"$src/scripts/slurm-executors.sh" 2 --scheduler tcp://sched:7700 --slots 3 --key-file "$work/my node.key" \
  --scheduler-key "$work/s.pub" --executor "$work/fake-executor" --dry-run -- --allow-shell >"$work/batch.sh"
grep -q '^#SBATCH --ntasks=2$' "$work/batch.sh" || fail "no --ntasks=2"
grep -q '^#SBATCH --cpus-per-task=3$' "$work/batch.sh" || fail "no --cpus-per-task=3"
out=$(PATH="$work:$PATH" SLURM_JOB_ID=42 SLURM_PROCID=0 SLURM_CPUS_PER_TASK=3 bash "$work/batch.sh")
want="[--scheduler]
[tcp://sched:7700]
[--key-file]
[$work/my node.key]
[--scheduler-key]
[$work/s.pub]
[--allow-shell]
[--slots]
[3]
[--name]
[slurm-42-0]"
[[ $out == "$want" ]] || fail "the executor got:
$out
wanted:
$want"
# Bad usage is refused before anything is submitted.
if "$src/scripts/slurm-executors.sh" 0 --scheduler tcp://x:1 --dry-run >/dev/null 2>&1; then fail "N = 0 accepted"; fi
if "$src/scripts/slurm-executors.sh" 2 --dry-run >/dev/null 2>&1; then fail "no --scheduler accepted"; fi
if "$src/scripts/slurm-executors.sh" 2 --scheduler tcp://x:1 --key-file k --dry-run >/dev/null 2>&1; then
  fail "--key-file without --scheduler-key accepted"
fi
echo "slurm test: ok"
