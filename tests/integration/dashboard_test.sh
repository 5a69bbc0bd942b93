#!/usr/bin/env bash
# The dashboard in a real headless browser (ctest dashboard_chromium,
# docs/DASHBOARD.md): the daemons run named jobs (one with a slow executor
# and speculation, so copies may show), then Debian's chromium loads
# http://HTTP/ and the DOM its JavaScript built must list the jobs, the
# executors and attempt bars. Skipped (exit 77) without chromium.
# Usage: dashboard_test.sh BIN_DIR
set -euo pipefail
bin=$1
browser=$(command -v chromium || command -v chromium-browser || true)
[[ -n $browser ]] || { echo "chromium not installed (apt-get install chromium, or TAILCUT_SETUP_BROWSER=1 scripts/setup.sh): skipped"; exit 77; }
# shellcheck source=tests/script_lib.sh
source "$(dirname "$0")/../script_lib.sh" dashboard

base=$tc_port_base
ex=tcp://127.0.0.1:$base cl=tcp://127.0.0.1:$((base + 1)) http=127.0.0.1:$((base + 2))
"$bin/tailcut-scheduler" --executor-endpoint "$ex" --client-endpoint "$cl" --http-listen "$http" \
  --policy spark --set 'scheduler.state_dir=""' >"$work/scheduler.log" 2>&1 &
pids+=($!)
for i in 1 2 3; do
  slow=()
  [[ $i == 3 ]] && slow=(--slowdown 4)
  "$bin/tailcut-executor" --scheduler "$ex" --slots 2 --name "dash-node-$i" "${slow[@]}" >"$work/executor$i.log" 2>&1 &
  pids+=($!)
done
for name in 'alpha-fanout' 'beta<b>"bold"</b>'; do
  out=$("$bin/tailcut" submit --kernel sleep --args "ms=60" --tasks 12 --name "$name" --wait --scheduler "$cl" 2>&1) ||
    fail "job $name failed: $out"
done

# --virtual-time-budget lets the page's timers and fetches run (a few
# refreshes) before the DOM is dumped.
HOME=$work "$browser" --headless --disable-gpu --no-sandbox --no-first-run --user-data-dir="$work/profile" \
  --virtual-time-budget=5000 --dump-dom "http://$http/" >"$work/dom.html" 2>"$work/chromium.log" ||
  fail "chromium failed: $(tail -5 "$work/chromium.log")"
dom=$(cat "$work/dom.html")
has() { [[ $dom == *"$1"* ]] || fail "the page lacks $2 ($1); DOM: ${dom:0:3000}"; }
has '<tr data-job="1">' "job 1's row"
has '<tr data-job="2">' "job 2's row"
has '<td>alpha-fanout</td>' "a job name"
# The name went in as text: escaped by the DOM, never parsed as markup.
has '<td>beta&lt;b&gt;"bold"&lt;/b&gt;</td>' "a job name with markup, as text"
[[ $dom != *'<b>"bold"</b>'* ]] || fail "a job name was rendered as markup"
has '<span class="state succeeded">succeeded</span>' "a finished job's state"
has '12/12' "a job's progress"
for i in 1 2 3; do has "<td>dash-node-$i</td>" "executor dash-node-$i"; done
has 'class="health ' "executor health"
has '<rect class="attempt ' "attempt bars on the timeline"
has 'data-outcome="committed"' "a winning attempt"
has '<path class="cdf"' "the latency CDF"
echo "dashboard test: the page shows 2 jobs, 3 executors, $(grep -o '<rect class="attempt ' "$work/dom.html" | wc -l) attempt bars"
