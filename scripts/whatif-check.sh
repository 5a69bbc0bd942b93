#!/usr/bin/env bash
# The what-if acceptance of docs/WHATIF.md: per seed, `tailcut bench` runs
# the healthy and the fail-slow scenario's [live] section with policy none
# (the fail-slow run writing its attempt trace), then `tailcut whatif` on
# that trace must name the fail-slow executor (the trace's comment lines say
# which scheduler id it is) as the top cause, with the mean JCT it cost
# within 20% of what the bench measured (fail-slow mean - healthy mean),
# over all seeds together (the bench's own run-to-run noise on a loaded
# machine is of that order, so each seed's row is shown too).
#
#   scripts/whatif-check.sh            # seeds 1 2 3
# Env: BUILD (default build), SEEDS (default "1 2 3"), OUT (keep the files).
# Exit 1 if whatif names another executor for any seed, or the seeds' mean
# saving is not within 20% of their mean measured cost. Live runs: about
# 15 s per bench run.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
TAILCUT=$BUILD/bin/tailcut
SEEDS=${SEEDS:-1 2 3}
[ -x "$TAILCUT" ] || { echo "build first: cmake --build $BUILD --target tailcut tailcut-executor" >&2; exit 2; }
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
for seed in $SEEDS; do
  "$TAILCUT" bench configs/scenarios/healthy.toml --policy none --seed "$seed" --json >"$OUT/healthy.$seed.json" 2>/dev/null
  "$TAILCUT" bench configs/scenarios/fail_slow.toml --policy none --seed "$seed" --json \
    --trace "$OUT/fail_slow.$seed.csv" >"$OUT/fail_slow.$seed.json" 2>/dev/null
  "$TAILCUT" whatif "$OUT/fail_slow.$seed.csv" --scenario configs/scenarios/fail_slow.toml --seed "$seed" \
    --json >"$OUT/whatif.$seed.json" 2>/dev/null
done
python3 - "$OUT" $SEEDS <<'PY'
import json, re, sys
out, seeds = sys.argv[1], sys.argv[2:]
print("| seed | bench mean none healthy s | bench mean none fail-slow s | bench cost s | fail-slow id | whatif top | whatif saved mean s | saved / cost | slowdown x | default saved mean s (replay) |")
print("|---|---|---|---|---|---|---|---|---|---|")
ok = True
costs, saves = [], []
for s in seeds:
    h = json.load(open("%s/healthy.%s.json" % (out, s)))[0]["mean"]
    f = json.load(open("%s/fail_slow.%s.json" % (out, s)))[0]["mean"]
    w = json.load(open("%s/whatif.%s.json" % (out, s)))
    slow = [m.group(1) for m in (re.match(r"# executor (\d+) = .*fail-slow", l) for l in open("%s/fail_slow.%s.csv" % (out, s))) if m]
    top = w["by_executor"][0]
    ratio = top["saved_mean"] / (f - h)
    named = bool(slow) and top["name"] == slow[0]
    ok &= named
    costs.append(f - h)
    saves.append(top["saved_mean"])
    print("| %s | %.4f | %.4f | %.4f | %s | %s | %.4f | %.2f | %.2f | %+.4f |" % (s, h, f, f - h, slow[0] if slow else "?",
          top["name"] + ("" if named else " (WRONG)"), top["saved_mean"], ratio, w["slowdown"], w["policy"]["saved_mean"]))
cost, save = sum(costs) / len(costs), sum(saves) / len(saves)
ok &= abs(save / cost - 1) <= 0.2
print("| all | | | %.4f | | | %.4f | %.2f | | |" % (cost, save, save / cost))
print("\n%s: whatif's mean saving is %.0f%% of the bench's mean cost" % ("PASS" if ok else "FAIL", 100 * save / cost))
sys.exit(0 if ok else 1)
PY
