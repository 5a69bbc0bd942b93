#!/usr/bin/env bash
# /metrics scraped by a real Prometheus server (ctest prometheus_scrape,
# docs/METRICS.md): the daemons run a 100-task job, Prometheus (Debian's
# `prometheus`) scrapes the scheduler every second, and its query API must
# show the target up with no scrape error and the samples `tailcut status`
# agrees with; the scheduler keeps a journal, whose commits must show in
# tailcut_journal_commit_seconds. Prometheus also loads the shipped rules
# (packaging/prometheus), each of which must evaluate without error.
# Skipped (exit 77) without prometheus or curl.
# Usage: prometheus_test.sh BIN_DIR [RULES_FILE]
set -euo pipefail
bin=$1 rules=${2:-}
command -v prometheus >/dev/null || { echo "prometheus not installed (apt-get install prometheus): skipped"; exit 77; }
command -v curl >/dev/null || { echo "curl not installed: skipped"; exit 77; }
# shellcheck source=tests/script_lib.sh
source "$(dirname "$0")/../script_lib.sh" prometheus

base=$tc_port_base
ex=tcp://127.0.0.1:$base cl=tcp://127.0.0.1:$((base + 1)) http=127.0.0.1:$((base + 2)) web=127.0.0.1:$((base + 3))
"$bin/tailcut-scheduler" --executor-endpoint "$ex" --client-endpoint "$cl" --http-listen "$http" \
  --set "scheduler.state_dir=\"$work/state\"" >"$work/scheduler.log" 2>&1 &
pids+=($!)
"$bin/tailcut-executor" --scheduler "$ex" --slots 2 >"$work/executor.log" 2>&1 &
pids+=($!)
status=$("$bin/tailcut" submit --kernel noop --tasks 100 --wait --json --scheduler "$cl") || fail "the job failed: $status"
[[ $status == *'"state":"JOB_SUCCEEDED"'* && $status == *'"committed":100'* ]] || fail "unexpected status: $status"

cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [${rules:+"$rules"}]
scrape_configs:
  - job_name: tailcut
    static_configs:
      - targets: ["$http"]
YAML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" --web.listen-address="$web" \
  >"$work/prometheus.log" 2>&1 &
pids+=($!)

# One value of an instant query ("" until Prometheus has a sample).
query() {
  curl -sfG "http://$web/api/v1/query" --data-urlencode "query=$1" 2>/dev/null |
    grep -o '"value":\[[^]]*\]' | head -1 | sed 's/.*,"\(.*\)"\]/\1/' || true
}
# Wait for the first scrapes (Prometheus' own start and first tick); the
# deadline only bounds a broken setup, nothing is timed.
for _ in $(seq 600); do
  [[ $(query 'up{job="tailcut"}') == 1 && -n $(query tailcut_tasks_committed_total) ]] && break
  sleep 0.1
done
targets=$(curl -sf "http://$web/api/v1/targets" || true)
[[ $targets == *'"health":"up"'* ]] || fail "the target is not up: $targets"
[[ $targets == *'"lastError":""'* ]] || fail "the scrape reported an error: $targets"
check() {
  local got
  got=$(query "$1")
  [[ $got == "$2" ]] || fail "$1 = '$got', wanted $2"
}
check tailcut_tasks_committed_total 100
check 'tailcut_jobs{state="succeeded"}' 1
check 'tailcut_jobs{state="running"}' 0
check 'sum(tailcut_attempts_total)' 100
check 'tailcut_executors{health="healthy"}' 1
check tailcut_job_latency_seconds_count 1
check 'tailcut_job_latency_seconds_bucket{le="+Inf"}' 1
check tailcut_dispatch_queue_length 0
check tailcut_journal_commit_failures_total 0
# At least the submit's commit (its reply waited for it) and the job's end.
commits=$(query tailcut_journal_commit_seconds_count)
[[ $commits =~ ^[0-9]+$ ]] && ((commits >= 2)) || fail "tailcut_journal_commit_seconds_count = '$commits', wanted >= 2"
if [[ -n $rules ]]; then
  # Every rule evaluated at least once (health no longer "unknown"), none
  # with an error.
  for _ in $(seq 600); do
    groups=$(curl -sf "http://$web/api/v1/rules" || true)
    [[ $groups == *'"health":'* && $groups != *'"health":"unknown"'* ]] && break
    sleep 0.1
  done
  loaded=$(grep -o '"health":"[a-z]*"' <<<"$groups" | sort | uniq -c | tr -s ' ')
  want=$(grep -c '^      - \(record\|alert\):' "$rules")
  [[ $(grep -o '"health":"ok"' <<<"$groups" | wc -l) == "$want" ]] || fail "rules: $loaded, wanted $want ok: $groups"
fi
echo "prometheus test: ok (Prometheus $(prometheus --version 2>&1 | head -1 | awk '{print $3}') scraped $http;" \
  "$commits journal commits${rules:+; $want rules evaluated ok})"
