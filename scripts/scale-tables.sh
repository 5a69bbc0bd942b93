#!/usr/bin/env bash
# Prints the task-scale tables of docs/benchmarks/tail.md ("The same defaults at
# every task scale", issue #24): the random-straggler shapes at 2 ms, 20 ms,
# 200 ms and 2 s with 1 and 2 slots per executor, each against its healthy
# twin, and one fail-slow executor of 4 per scale, with the acceptance
# checks (default p99 <= 1.5x the healthy p99, p50 <= 1.05x none's, extra
# machine time <= 10%, healthy twin within 3% of none, fail-slow p50 <=
# none's, p99 within 1.25x the online reference).
#
#   scripts/scale-tables.sh              # simulator (deterministic)
#   MODE=bench scripts/scale-tables.sh   # live: tailcut bench (noisy; slow)
# Env: BUILD (default build), SCALES (default "2ms 20ms 200ms 2s"), SLOTS
# (default "1 2"), POLICIES (default none,spark,late,hedge,default).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
MODE=${MODE:-sim}
TAILCUT=$BUILD/bin/tailcut
SCALES=${SCALES:-2ms 20ms 200ms 2s}
SLOTS=${SLOTS:-1 2}
POLICIES=${POLICIES:-none,spark,late,hedge,default}
[ -x "$TAILCUT" ] || { echo "build first: cmake --build $BUILD --target tailcut" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { "$TAILCUT" "$MODE" "configs/scenarios/$1.toml" --policy "$POLICIES" --json > "$tmp/$1.json" 2> "$tmp/$1.err" ||
        { echo "$1: $(tail -1 "$tmp/$1.err")" >&2; exit 1; }; }
shapes=()
for sc in $SCALES; do
  for sl in $SLOTS; do
    for k in stragglers healthy; do run "${k}_${sc}_${sl}slot"; done
    shapes+=("${sc}_${sl}slot")
  done
  run "fail_slow_$sc"
done
python3 - "$tmp" "$MODE" "$POLICIES" "${shapes[@]}" -- $SCALES <<'PY'
import json, sys
args = sys.argv[1:]
tmp, mode, policies = args[0], args[1], args[2].split(",")
cut = args.index("--")
shapes, scales = args[3:cut], args[cut + 1:]
load = lambda n: {r["policy"]: r for r in json.load(open("%s/%s.json" % (tmp, n)))}
ok = lambda b: "yes" if b else "**no**"
pct = lambda v: "-" if v is None else "%+.1f%%" % (100 * v)
print("| shape | policy | p50 s | p99 s | p99 / healthy p99 | p50 / none | extra machine | p99 / online |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
checks = []
for s in shapes:
    st, he = load("stragglers_" + s), load("healthy_" + s)
    hp99, n, on = he["none"]["p99"], st["none"], st.get("online")
    for p in policies + ["bound", "online"]:
        if p not in st: continue
        r = st[p]
        print("| %s | %s | %.4f | %.4f | %.2f | %.2f | %s | %s |" % (s, "*%s*" % p if p in ("bound", "online") else p,
              r["p50"], r["p99"], r["p99"] / hp99, r["p50"] / n["p50"], pct(r["extra_machine"]),
              "-" if on is None else "%.2f" % (r["p99"] / on["p99"])))
    d, hd, hn = st["default"], he["default"], he["none"]
    checks.append((s, d["p99"] / hp99, d["p50"] / n["p50"], d["extra_machine"],
                   hd["p50"] / hn["p50"], hd["p99"] / hn["p99"], d["p99"] / on["p99"] if on else None))
print("\n| shape | default p99 / healthy p99 (≤ 1.5) | p50 / none (≤ 1.05) | extra machine (≤ 10%) | healthy twin p50 / none | healthy twin p99 / none (within 3%) | p99 / online (≤ 1.25) |")
print("|---|---:|---:|---:|---:|---:|---:|")
for s, a, b, c, e, f, g in checks:
    print("| %s | %.2f %s | %.3f %s | %s %s | %.3f %s | %.3f %s | %s |" % (s, a, ok(a <= 1.5), b, ok(b <= 1.05), pct(c),
          ok(c is None or c <= 0.10), e, ok(abs(e - 1) <= 0.03), f, ok(abs(f - 1) <= 0.03),
          "-" if g is None else "%.2f %s" % (g, ok(g <= 1.25))))
print("\n| fail-slow 1 of 4 | none p50 s | default p50 s | default p50 / none (≤ 1) | none p99 s | default p99 s |")
print("|---|---:|---:|---:|---:|---:|")
for sc in scales:
    r = load("fail_slow_" + sc)
    n, d = r["none"], r["default"]
    print("| %s | %.4f | %.4f | %.3f %s | %.4f | %.4f |" % (sc, n["p50"], d["p50"], d["p50"] / n["p50"],
          ok(d["p50"] <= n["p50"]), n["p99"], d["p99"]))
PY
