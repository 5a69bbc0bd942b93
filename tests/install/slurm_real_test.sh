#!/usr/bin/env bash
# ctest slurm_real (docs/DEPLOY.md): scripts/slurm-executors.sh through a
# real Slurm. A one-node Slurm (scripts/slurm-local.sh: munged, slurmctld,
# slurmd in a temp dir) runs the sbatch job of 2 executors; they register
# with a scheduler on this machine as slurm-JOB-0 and -1, a 20-task job runs
# on them, and `scancel` ends the allocation: both say goodbye (no executor
# is "lost"), the scheduler lists none, and the Slurm job is gone. Then the
# other shape, scripts/slurm-batch.sh: scheduler, executors and a command in
# one allocation (`sbatch --wait`). Skipped (exit 77, with the reason) when
# Slurm or munge is not installed or cannot start here.
# Usage: slurm_real_test.sh BIN_DIR SRC_DIR
set -euo pipefail
bin=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
# shellcheck source=tests/script_lib.sh
source "$src/tests/script_lib.sh" slurm
slurm_dir=$work/slurm
# Whatever happens, no Slurm job and no daemon outlives the test: the trap,
# or, if the test is killed (ctest's timeout), a watcher.
started=0
cleanup() {
  tc_stop_watchers
  # Only our own cluster's jobs (SLURM_CONF is ours once started).
  ((started)) && { scancel --full --quiet --user=root 2>/dev/null || true; }
  "$src/scripts/slurm-local.sh" stop "$slurm_dir" || true
  tc_cleanup
}
trap cleanup EXIT
tc_on_kill bash -c "'$src/scripts/slurm-local.sh' stop '$slurm_dir'; rm -rf '$work'"

rc=0
out=$("$src/scripts/slurm-local.sh" start "$slurm_dir" 2>"$work/slurm-start.log") || rc=$?
if ((rc == 77)); then
  echo "slurm test: $(tail -1 "$work/slurm-start.log")"
  exit 77
fi
((rc == 0)) || fail "slurm-local.sh start exited $rc: $(cat "$work/slurm-start.log")"
eval "$out"  # export SLURM_CONF=...
started=1
cp "$slurm_dir"/log/*.log "$work/" 2>/dev/null || true

tc() { local cmd=$1; shift; "$bin/tailcut" "$cmd" --scheduler "$cl" "$@"; }
executors_json() { tc executors --json; }
# Executors named slurm-JOB-*, as the scheduler lists them.
count_named() { executors_json | grep -o "\"name\":\"slurm-$1-[0-9]*\"" | wc -l; }
wait_for() {  # wait_for DESCRIPTION COMMAND...: up to 60 s, a bound for a broken setup only
  local what=$1; shift
  for _ in $(seq 600); do "$@" && return 0; sleep 0.1; done
  fail "timed out waiting for $what"
}

base=$tc_port_base
ex=tcp://127.0.0.1:$base cl=tcp://127.0.0.1:$((base + 1))
"$bin/tailcut-scheduler" --executor-endpoint "$ex" --client-endpoint "$cl" --http-listen "" \
  --set 'scheduler.state_dir=""' >"$work/scheduler.log" 2>&1 &
pids+=($!)
tc_on_kill kill -TERM "$!"

# --- executors through sbatch/srun -----------------------------------------
cd "$work"
submitted=$("$src/scripts/slurm-executors.sh" 2 --scheduler "$ex" --slots 1 --time 10:00 \
  --executor "$bin/tailcut-executor") || fail "slurm-executors.sh failed: $submitted"
echo "$submitted"
job=$(sed -n 's/^slurm-executors: job \([0-9]*\):.*/\1/p' <<<"$submitted")
[[ -n $job ]] || fail "no job id in: $submitted"
two_up() { [[ $(count_named "$job" 2>/dev/null) == 2 ]]; }
wait_for "2 executors slurm-$job-* to register" two_up
status=$(tc submit --kernel noop --tasks 20 --wait --json) || fail "the job failed: $status"
[[ $status == *'"state":"JOB_SUCCEEDED"'* && $status == *'"committed":20'* ]] || fail "unexpected status: $status"
finished=$(executors_json | grep -o '"finished":"\?[0-9]*' | grep -o '[0-9]*$' | awk '{s += $1} END {print s + 0}')
[[ $finished == 20 ]] || fail "the slurm executors finished $finished tasks, wanted 20: $(executors_json)"

scancel "$job"
none_up() { [[ $(count_named "$job" 2>/dev/null) == 0 ]]; }
wait_for "the executors to leave after scancel" none_up
job_gone() { [[ -z $(squeue -h -j "$job" -o %i 2>/dev/null) ]]; }
wait_for "Slurm job $job to end" job_gone
left=$(grep -c 'left: executor shutting down' "$work/scheduler.log" || true)
[[ $left == 2 ]] || fail "$left executors said goodbye, wanted 2"
if grep -qi 'lost' "$work/scheduler.log"; then fail "an executor was lost instead of leaving"; fi
grep -q 'saying goodbye' "tailcut-executors-$job.log" || fail "the executors' log shows no SIGTERM"
echo "slurm test: executors: job $job ran 20 tasks on slurm-$job-0/1; scancel: 2 goodbyes, 0 registered"

# --- scheduler, executors and a command in one allocation ------------------
batch_out=$(TAILCUT_BIN=$bin timeout 120 sbatch --wait --parsable --ntasks=2 --cpus-per-task=1 --time=10:00 \
  "$src/scripts/slurm-batch.sh" "$bin/tailcut" submit --kernel noop --tasks 30 --wait --json) ||
  fail "the batch allocation failed: $batch_out $(cat "$work"/tailcut-batch-*.log 2>/dev/null)"
bjob=${batch_out%%;*}
cat "tailcut-batch-$bjob.log" >"$work/batch.log"
grep -q '"state":"JOB_SUCCEEDED"' "$work/batch.log" && grep -q '"committed":30' "$work/batch.log" ||
  fail "the batch command's job did not succeed"
grep -q 'slurm-batch: 2 executors registered' "$work/batch.log" || fail "the batch's executors did not register"
echo "slurm test: batch job $bjob: scheduler + 2 executors + a 30-task job in one allocation"
echo "slurm test: ok ($(sinfo --version))"
