#!/usr/bin/env bash
# Every program and every `tailcut` subcommand: `--help` exits 0 and lists
# each flag the command promises (and the environment variable of each
# client flag); a mistyped flag exits 2 naming it and suggesting the right
# one; a stray argument exits 2 naming it. The flag lists below are the
# interface users and scripts rely on (README.md, docs/, scripts/): a flag
# dropped from a command, or left out of its --help, fails here.
# Usage: cli_help_test.sh BIN_DIR
set -uo pipefail
bin=$1
source "$(dirname "$0")/../script_lib.sh" cli_help

client="--scheduler --key-file --scheduler-key --timeout"
compare="--policy --seed --json --csv --plot --no-online"
declare -A flags=(
  ["tailcut submit"]="--kernel --args --tasks --idempotent --not-idempotent --k --gpus --memory-mb --name --priority --output-dir --after --run --wait --json $client"
  ["tailcut status"]="--json $client"
  ["tailcut cancel"]="--json $client"
  ["tailcut results"]="--json $client"
  ["tailcut trace"]="-o --json $client"
  ["tailcut executors"]="--json $client"
  ["tailcut predict-eval"]="--json --predictor --config --set --assess-at --threshold --no-progress"
  ["tailcut trace-gen"]="--out --executors --tasks --job-size --classes --base-time --sigma --gamma-shape --speed-spread --skew --size-pareto --size-exponent --straggler-prob --straggler-min --straggler-max --fail-slow-executor --fail-slow-onset --fail-slow-end --fail-slow-factor --label-cut --seed"
  ["tailcut sim"]="$compare --live-model --set --speed-shares"
  ["tailcut bench"]="$compare --jobs --rounds --executor --trace"
  ["tailcut whatif"]="--scenario --policy --seed --top --json"
  ["tailcut train"]="--model --workers --stragglers --code --iters --rows --dim --slowdown --lr --seed --placement --policy --gpu --json"
  ["tailcut demo"]="--executors --slots --tasks --jobs --task-ms --slow-factor --runs --keep-logs --debug"
  ["tailcut keygen"]="--role --dir"
  ["tailcut-scheduler"]="--config --executor-endpoint --client-endpoint --http-listen --key-file --trusted-keys --parent --parent-key-file --parent-key --policy --set --log-level --version"
  ["tailcut-executor"]="--config --scheduler --slots --threads --max-queued --max-output-bytes --name --label --key-file --scheduler-key --allow-shell --allow-exec --allow-python --trust-unauthenticated-scheduler --exec-allow --kernel-plugin --set --log-level --slowdown --fail-slow-after --fail-slow-factor --delay-prob --delay-ms --crash-after --fault-seed --version"
  ["tailcut-swarm"]="--scheduler --executors --slots --memory-mb --gpus --processes --threads --jitter --fail-slow-fraction --fail-slow-factor --key-file --scheduler-key --seed --name-prefix --duration-s --client --wait-executors --client-key-file --scheduler-pid --idle-s --noop-tasks --fanout"
  ["tailcut-predict-eval"]="--json --predictor --config --set --assess-at --threshold --no-progress"
  ["tailcut-trace-gen"]="--out --executors --tasks --seed --straggler-prob"
  ["coding-error-report"]=""
)
declare -A env=(
  [--scheduler]=TAILCUT_SCHEDULER [--key-file]=TAILCUT_KEY_FILE [--scheduler-key]=TAILCUT_SCHEDULER_KEY
)

# A flag with two neighbouring letters swapped: --tasks -> --tsaks.
mistype() {
  local f=$1 body=${1#--}
  ((${#body} >= 3)) || { echo "--${body}zz"; return; }
  echo "--${body:0:1}${body:2:1}${body:1:1}${body:3}"
}

run() {  # run CMD... : sets out, err, rc
  local words
  read -ra words <<<"$1"
  shift
  timeout 20 "$bin/${words[0]}" "${words[@]:1}" "$@" >"$work/out" 2>"$work/err"
  rc=$?
  out=$(cat "$work/out")
  err=$(cat "$work/err")
}

n=0
for cmd in "${!flags[@]}"; do
  run "$cmd" --help
  [[ $rc == 0 ]] || fail "$cmd --help: exit $rc ($err)"
  [[ -z $err ]] || fail "$cmd --help wrote to stderr: $err"
  for f in ${flags[$cmd]}; do
    grep -qE -- "(^|[ ,])$f( |,|=|\$)" <<<"$out" || fail "$cmd --help does not list $f:
$out"
    if [[ $cmd == "tailcut "* && -n ${env[$f]:-} ]]; then
      grep -qE -- "$f [A-Z]+ \(Env:${env[$f]}\)" <<<"$out" || fail "$cmd --help: $f does not name ${env[$f]}"
    fi
  done
  # The first long flag, mistyped: refused, named, the right one suggested.
  first=""
  for f in ${flags[$cmd]}; do [[ $f == --??* && $f != --version ]] && { first=$f; break; }; done
  if [[ -n $first ]]; then
    bad=$(mistype "$first")
    run "$cmd" "$bad" 1
    [[ $rc == 2 ]] || fail "$cmd $bad: exit $rc, not 2 ($err)"
    grep -qF -- "unknown option $bad" <<<"$err" || fail "$cmd $bad: the error does not name it: $err"
    grep -qF -- "did you mean $first?" <<<"$err" || fail "$cmd $bad: no suggestion of $first: $err"
  fi
  # A flag nothing is close to.
  run "$cmd" --zzqx-bogus 1
  [[ $rc == 2 ]] || fail "$cmd --zzqx-bogus: exit $rc, not 2"
  grep -qF -- "unknown option --zzqx-bogus" <<<"$err" || fail "$cmd --zzqx-bogus: $err"
  n=$((n + 1))
done

# The issue's cases: a mistyped flag never runs a job (no scheduler is
# running: a parse that got through would exit 3, not 2).
export TAILCUT_SCHEDULER=tcp://127.0.0.1:1 TAILCUT_KEY_FILE= TAILCUT_SCHEDULER_KEY=
for args in "--kernel sleep --args ms=10 --taks 5 --wait" "--kernel sleep --args ms=10 --tasks 3 --idempotnet --wait" \
            "--kernel sleep --tasks 3 --wait --bogus"; do
  run "tailcut submit" $args --timeout 1
  [[ $rc == 2 ]] || fail "submit $args: exit $rc, not 2 ($err)"
  grep -qE "unknown option --(taks|idempotnet|bogus)" <<<"$err" || fail "submit $args: $err"
done
grep -qF "did you mean --idempotent?" <<<"$(timeout 10 "$bin/tailcut" submit --kernel noop --idempotnet 2>&1)" ||
  fail "--idempotnet: no suggestion of --idempotent"
run "tailcut executors" --bogus x
[[ $rc == 2 ]] || fail "executors --bogus x: exit $rc"
# Stray arguments and unknown commands.
run "tailcut status" 1 2
[[ $rc == 2 && $err == *"unexpected argument '2'"* ]] || fail "status 1 2: exit $rc: $err"
run "tailcut executors" extra
[[ $rc == 2 && $err == *"unexpected argument 'extra'"* ]] || fail "executors extra: exit $rc: $err"
run "tailcut" sumbit
[[ $rc == 2 && $err == *"unknown command 'sumbit' (did you mean submit?)"* ]] || fail "tailcut sumbit: $rc: $err"
run "tailcut status"
[[ $rc == 2 && $err == *JOB* ]] || fail "status without JOB: exit $rc: $err"
run "tailcut submit" --tasks
[[ $rc == 2 && $err == *"--tasks needs a value"* ]] || fail "submit --tasks: exit $rc: $err"
# The top level lists every command.
run "tailcut" --help
for c in submit status cancel results trace executors predict-eval trace-gen sim bench whatif train demo keygen; do
  grep -qE "^  $c( |$)" <<<"$out" || fail "tailcut --help does not list $c"
done
echo "cli_help: $n commands checked"
