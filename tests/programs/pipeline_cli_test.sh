#!/usr/bin/env bash
# `tailcut submit PIPELINE.toml` against live daemons: the example pipeline
# (configs/jobs/pipeline.toml) prints each stage's job id, its reduce sums
# the maps' outputs, the same file submitted again returns the same jobs;
# `--after` queues a job behind another and `status` says which it waits
# for; an unknown parent is refused (ctest cli_pipeline).
# Usage: pipeline_cli_test.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
# shellcheck source=tests/script_lib.sh
source "$(dirname "$0")/../script_lib.sh" pipeline

base=$tc_port_base
ex=tcp://127.0.0.1:$base cl=tcp://127.0.0.1:$((base + 1))
"$bin/tailcut-scheduler" --executor-endpoint "$ex" --client-endpoint "$cl" --http-listen '' \
  --set 'scheduler.state_dir=""' >>"$work/scheduler.log" 2>&1 &
pids+=($!)
"$bin/tailcut-executor" --scheduler "$ex" --slots 4 --name one --allow-shell --trust-unauthenticated-scheduler >"$work/executor.log" 2>&1 &
pids+=($!)

"$bin/tailcut" submit "$src/configs/jobs/pipeline.toml" --wait --scheduler "$cl" --timeout 30 >"$work/submit.log" 2>&1 ||
  fail "the pipeline failed: $(cat "$work/submit.log")"
map=$(sed -n 's/^stage map: job \([0-9]*\)$/\1/p' "$work/submit.log")
reduce=$(sed -n 's/^stage reduce: job \([0-9]*\)$/\1/p' "$work/submit.log")
[[ -n $map && -n $reduce ]] || fail "no stage job ids: $(cat "$work/submit.log")"
"$bin/tailcut" results "$reduce" --scheduler "$cl" >"$work/results.log" || fail "results failed"
grep -q ' 140$' "$work/results.log" || fail "the reduce did not sum 0..7 squared to 140: $(cat "$work/results.log")"
"$bin/tailcut" submit "$src/configs/jobs/pipeline.toml" --scheduler "$cl" >"$work/again.log" 2>&1 || fail "resubmit failed"
grep -q "^stage reduce: job $reduce\$" "$work/again.log" || fail "resubmitting made new jobs: $(cat "$work/again.log")"

# --after: queued behind a running job, waiting for it by id.
"$bin/tailcut" submit --kernel sleep --args ms=1500 --scheduler "$cl" >"$work/long.log"
long=$(sed -n 's/^submitted job \([0-9]*\)$/\1/p' "$work/long.log")
"$bin/tailcut" submit --kernel noop --after "$long" --scheduler "$cl" >"$work/child.log"
child=$(sed -n 's/^submitted job \([0-9]*\)$/\1/p' "$work/child.log")
"$bin/tailcut" status "$child" --scheduler "$cl" >"$work/status.log"
grep -q ": queued, " "$work/status.log" || fail "the child is not queued: $(cat "$work/status.log")"
grep -q "waiting for job $long\$" "$work/status.log" || fail "status does not name the parent: $(cat "$work/status.log")"

rc=0
"$bin/tailcut" submit --kernel noop --after 987654 --scheduler "$cl" >/dev/null 2>"$work/error.log" || rc=$?
[[ $rc == 1 ]] && grep -q "no job 987654" "$work/error.log" || fail "unknown parent: exit $rc, $(cat "$work/error.log")"
echo "pipeline CLI test: stages $map -> $reduce summed 140, resubmit returned them, --after queued, unknown parent refused"
