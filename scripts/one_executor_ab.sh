#!/usr/bin/env bash
# Two builds side by side on the one-executor bench (issue 41, docs/SCALE.md
# "One executor"): scripts/one_executor_bench.sh for each chain, the two
# builds' daemons alternating within each round, then per build and chain
# the median tasks/s and CPU per task (scheduler, executor), and `default`
# over `none`.
# Ratios within one such run are what count on a shared machine.
#
#   scripts/one_executor_ab.sh BEFORE_BIN AFTER_BIN [ROUNDS [CHAIN...]]
#     BIN: a build's bin folder (copy it to /tmp to keep an old build);
#     ROUNDS default 3; CHAINs default `default none`. TASKS (300000) and
#     RUNS (2) per bench call. The client is CLI (default build/bin/tailcut).
set -euo pipefail
cd "$(dirname "$0")/.."
before=$1 after=$2 rounds=${3:-3}
shift $(($# < 3 ? $# : 3))
chains=("$@")
((${#chains[@]})) || chains=(default none)
export CLI=${CLI:-build/bin/tailcut}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "== one_executor_ab: before $before, after $after, $rounds rounds, load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; ++r)); do
  for chain in "${chains[@]}"; do
    for which in before after; do
      bin=$before
      [[ $which == after ]] && bin=$after
      load=$(cut -d' ' -f1 /proc/loadavg)
      scripts/one_executor_bench.sh "$bin" "$chain" "${TASKS:-300000}" "${RUNS:-2}" | grep '^run' |
        sed "s/^/$which $chain round $r load $load /" | tee -a "$out"
    done
  done
done
echo "== load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" <<'PY'
import collections, re, statistics, sys
runs = collections.defaultdict(lambda: ([], [], []))
for line in open(sys.argv[1]):
    m = re.match(r"(\w+) (\S+) round \d+ load \S+ run \d+: \S+ s, (\d+) tasks/s; CPU per task: scheduler (\S+) us, executor (\S+) us", line)
    if m:
        for i, v in enumerate((int(m[3]), float(m[4]), float(m[5]))):
            runs[(m[1], m[2])][i].append(v)
for (which, chain), (tps, cpu, ex) in sorted(runs.items()):
    print(f"{which:6} {chain:8} median {statistics.median(tps):9,.0f} tasks/s, CPU per task: scheduler "
          f"{statistics.median(cpu):.2f} us, executor {statistics.median(ex):.2f} us ({len(tps)} runs)")
for which in ("before", "after"):
    if (which, "default") in runs and (which, "none") in runs:
        d, n = (statistics.median(runs[(which, c)][0]) for c in ("default", "none"))
        print(f"{which:6} default / none tasks/s: {d / n:.3f}")
PY
