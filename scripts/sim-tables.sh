#!/usr/bin/env bash
# Prints the simulator policy-comparison tables of docs/benchmarks/policies.md
# ("Simulator: policy comparison"): the summary, then one table per scenario.
# The simulator is deterministic: the same build and seed print the same
# numbers on any machine.
#
#   scripts/sim-tables.sh > /tmp/tables.md
# Env: BUILD (default build), POLICIES (default: all eight; keep none, the
# reference of extra machine time, and default, the summary's column).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
TAILCUT=$BUILD/bin/tailcut
POLICIES=${POLICIES:-none,spark,late,clone,hedge,reassign,predictive,default}
SCENARIOS=(healthy random_stragglers fail_slow heavy_tail executor_crash job_mix federated)
[ -x "$TAILCUT" ] || { echo "build first: cmake --build $BUILD --target tailcut" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for s in "${SCENARIOS[@]}"; do
  "$TAILCUT" sim "configs/scenarios/$s.toml" --policy "$POLICIES" --json > "$tmp/$s.json" 2>/dev/null
done
python3 - "$tmp" "$POLICIES" "${SCENARIOS[@]}" <<'PY'
import json, sys
tmp, policies, scenarios = sys.argv[1], sys.argv[2], sys.argv[3:]
f = lambda v: "%.4f" % v if v < 1 else "%.3f" % v
data = {s: {r["policy"]: r for r in json.load(open("%s/%s.json" % (tmp, s)))} for s in scenarios}
print("| scenario | p99 none | p99 default | p99 bound | default p99 / bound | p99 online | default p99 / online | extra work default | extra machine default |")
print("|---|---|---|---|---|---|---|---|---|")
for s in scenarios:
    n, d, b, o = data[s]["none"], data[s]["default"], data[s]["bound"], data[s].get("online")
    print("| %s | %.3f | %.3f | %.3f | %.2f | %s | %s | %.2f%% | %+.2f%% |" % (s, n["p99"], d["p99"], b["p99"], d["p99_x_bound"],
          "-" if o is None else "%.3f" % o["p99"], "-" if o is None else "%.2f" % (d["p99"] / o["p99"]),
          100 * d["extra_work"], 100 * d["extra_machine"]))
x = lambda v: "-" if v is None else "%.2f" % v
pct = lambda v: "-" if v is None else "%+.2f" % (100 * v)
for s in scenarios:
    print("\n### %s\n" % s)
    print("    build/bin/tailcut sim configs/scenarios/%s.toml --policy %s\n" % (s, policies))
    print("| policy | jobs | mean s | p50 s | p90 s | p99 s | p99.9 s | extra work % | copies | p50 / bound | p99 / bound | extra machine % |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for p in policies.split(",") + [q for q in ("bound", "online") if q in data[s]]:
        r = data[s][p]
        bound = p in ("bound", "online")  # the references
        print("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % ("*%s*" % p if bound else p, r["jobs"],
              f(r["mean"]), f(r["p50"]), f(r["p90"]), f(r["p99"]), f(r["p999"]),
              "-" if p == "bound" else "%.2f" % (100 * r["extra_work"]), "-" if p == "bound" else "%d" % r["copies"],
              x(r["p50_x_bound"]), x(r["p99_x_bound"]), pct(r["extra_machine"])))
PY
