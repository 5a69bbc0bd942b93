#!/usr/bin/env bash
# ctest prometheus_rules (docs/METRICS.md, "Rules"): the shipped rules
# (packaging/prometheus/tailcut-rules.yml) pass `promtool check rules` and
# their unit tests (`promtool test rules`), and every tailcut_ metric they
# name is one the scheduler serves (docs/METRICS.md's table). Skipped
# (exit 77) without promtool (Debian's prometheus package).
# Usage: prometheus_rules_test.sh SRC_DIR
set -euo pipefail
src=$1
command -v promtool >/dev/null ||
  { echo "promtool not installed (apt-get install prometheus, or TAILCUT_SETUP_PROMETHEUS=1 scripts/setup.sh): skipped"; exit 77; }
rules=$src/packaging/prometheus/tailcut-rules.yml
promtool check rules "$rules"
(cd "$src/packaging/prometheus" && promtool test rules tailcut-rules.test.yml)
# Names in the rules' expressions (recorded tailcut:... names aside), less
# the _bucket/_count/_sum of histograms, against the documented metrics.
documented=$(grep -o '^| `tailcut_[a-z_]*`' "$src/docs/METRICS.md" | tr -d '|` ' | sort -u)
used=$(grep -E '^\s+expr:|^\s{10}' "$rules" | grep -o 'tailcut_[a-z_]*' | sed -E 's/_(bucket|count|sum)$//' | sort -u)
[[ -n $used ]] || { echo "prometheus rules: no tailcut_ metric found in $rules" >&2; exit 1; }
unknown=$(comm -23 <(echo "$used") <(echo "$documented"))
[[ -z $unknown ]] || { echo "prometheus rules: not in docs/METRICS.md: $unknown" >&2; exit 1; }
echo "prometheus rules: ok ($(grep -c '^      - \(record\|alert\):' "$rules") rules; metrics used: $(echo $used))"
