# shellcheck shell=bash
# Shared by the shell tests (source it): a scratch folder `work`, a list
# `pids` of background processes killed at exit, and `fail MSG`, which
# prints MSG and the tail of every $work/*.log, then exits 1.
# Usage: source tests/script_lib.sh NAME   (NAME prefixes the folder and messages)
tc_name=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/tailcut-$tc_name-XXXXXX")
pids=()
tc_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap tc_cleanup EXIT
fail() {
  echo "$tc_name test: $*" >&2
  for f in "$work"/*.log; do [[ -f $f ]] && { echo "== $f" >&2; tail -20 "$f" >&2; }; done
  exit 1
}
