#!/usr/bin/env bash
# Kernel arguments checked at submit, through the CLI and a job file, with
# the built-in sleep kernel's declaration (docs/KERNELS.md, "Declared
# arguments"); and the output scripts read: --json ids are numbers,
# `results` rows come in task order with no blank lines, a missing job file
# says "cannot open FILE: REASON" (ctest cli_kernel_args).
# Usage: kernel_args_cli_test.sh BIN_DIR
set -uo pipefail
bin=$1
# shellcheck source=tests/script_lib.sh
source "$(dirname "$0")/../script_lib.sh" kernel_args

base=$tc_port_base
ex=tcp://127.0.0.1:$base
export TAILCUT_SCHEDULER=tcp://127.0.0.1:$((base + 1))
"$bin/tailcut-scheduler" --executor-endpoint "$ex" --client-endpoint "$TAILCUT_SCHEDULER" --http-listen '' \
  --set 'scheduler.state_dir=""' >"$work/scheduler.log" 2>&1 &
pids+=($!)
"$bin/tailcut-executor" --scheduler "$ex" --slots 2 --allow-shell --trust-unauthenticated-scheduler \
  >"$work/executor.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  "$bin/tailcut" executors 2>/dev/null | grep -q "^1 " && break
  sleep 0.1
done

# The issue's case: a mistyped argument is refused, naming what sleep takes.
"$bin/tailcut" submit --kernel sleep --args msx=10 --wait >"$work/out" 2>"$work/err"
rc=$?
[[ $rc == 1 ]] || fail "--args msx=10: exit $rc, not 1 (refused): $(cat "$work/err")"
grep -q "kernel 'sleep' has no argument 'msx'" "$work/err" || fail "not named: $(cat "$work/err")"
grep -q "ms (number in \[0, " "$work/err" && grep -q "sigma (number" "$work/err" && grep -q "seed (integer)" "$work/err" ||
  fail "the accepted arguments are not listed: $(cat "$work/err")"
"$bin/tailcut" submit --kernel sleep --args "ms=abc" >/dev/null 2>"$work/err" && fail "ms=abc was taken"
grep -q "'ms' must be a finite number" "$work/err" || fail "ms=abc: $(cat "$work/err")"

# A job file alike.
cat >"$work/bad.toml" <<'EOF'
name = "bad"
count = 2
[template]
kernel = "spin"
args = "ms=5 sigma=0.2"
EOF
"$bin/tailcut" submit "$work/bad.toml" >/dev/null 2>"$work/err" && fail "a job file's spin sigma= was taken"
grep -q "kernel 'spin' has no argument 'sigma' (it takes ms (number" "$work/err" ||
  fail "job file: $(cat "$work/err")"

# Free-form kernels take anything; good arguments run.
"$bin/tailcut" submit --kernel shell --args 'echo out-$TAILCUT_TASK_INDEX' --tasks 12 --wait >/dev/null 2>"$work/err" ||
  fail "shell: $(cat "$work/err")"
cat >"$work/good.toml" <<'EOF'
name = "good"
count = 12
return_outputs = true
[template]
kernel = "shell"
args = "echo row-{index}"
EOF
"$bin/tailcut" submit "$work/good.toml" --wait --json >"$work/out" 2>"$work/err" || fail "good.toml: $(cat "$work/err")"
job=$(grep -Eo '"job_id":[0-9]+,' "$work/out" | grep -Eo '[0-9]+') || fail "--wait --json: job_id not a number: $(cat "$work/out")"
"$bin/tailcut" submit --kernel sleep --args "ms=1 seed=4" --json >"$work/out" || fail "sleep ms=1 seed=4 refused"
grep -Eq '^\{"job_id":[0-9]+,"tasks":1\}$' "$work/out" || fail "submit --json: $(cat "$work/out")"

# results: one line per task, in task order, no blank lines.
"$bin/tailcut" results "$job" >"$work/results" || fail "results $job"
[[ $(wc -l <"$work/results") == 12 ]] || fail "results: not 12 lines: $(cat -A "$work/results")"
! grep -q '^$' "$work/results" || fail "results: a blank line"
[[ $(awk '{print $2}' "$work/results" | tr '\n' ' ') == "0 1 2 3 4 5 6 7 8 9 10 11 " ]] ||
  fail "results out of task order: $(cat "$work/results")"
grep -q ' row-11$' "$work/results" || fail "results: the output: $(cat "$work/results")"
"$bin/tailcut" results "$job" --json | grep -q "\"job_id\":$job," || fail "results --json: job_id not a number"

# A missing job file.
"$bin/tailcut" submit "$work/nosuch.toml" 2>"$work/err"
rc=$?
[[ $rc == 2 ]] || fail "missing job file: exit $rc"
grep -q "cannot open $work/nosuch.toml: No such file or directory" "$work/err" || fail "missing file: $(cat "$work/err")"
echo "kernel_args: refused at submit with the kernel's arguments; outputs as scripts read them"
