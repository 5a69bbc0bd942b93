#!/usr/bin/env bash
# ctest deb_package (docs/DEPLOY.md): `cpack -G DEB` of this build, then the
# package installed into this machine with `dpkg -i`: the binaries on PATH,
# the units naming /usr/bin, conffiles under /etc/tailcut, the `tailcut`
# user owning /var/lib/tailcut. As that user the scheduler runs in the
# foreground from /etc/tailcut/scheduler.toml (ports moved off the
# defaults, which a real deployment may use) with an executor from
# /etc/tailcut/executor-local.toml; a job runs and the journal lands in the
# state directory. `dpkg -r` keeps the state directory and configs,
# `dpkg --purge` removes both.
# Needs root; skipped (exit 77, with the reason) without it, without dpkg
# or cpack, or when this machine already has a tailcut package,
# /etc/tailcut or /var/lib/tailcut (an operator's: not touched). Whatever
# fails midway, the trap purges the package and removes what the test made.
# Usage: deb_test.sh BUILD_DIR SRC_DIR
#        deb_test.sh --undo USER_EXISTED   (the cleanup alone; a killed test's watcher runs it)
set -euo pipefail
# Known to dpkg: installed, or removed with its configs left.
installed() {
  local st
  st=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
  [[ -n $st && $st != "unknown ok not-installed" ]]
}
# Purges the package and removes what the test made (neither folder existed
# before it started: checked below), the user too unless it was there.
undo() {
  if installed tailcut; then dpkg --purge tailcut >/dev/null 2>&1 || echo "deb test: cleanup: dpkg --purge failed" >&2; fi
  rm -rf /etc/tailcut /var/lib/tailcut
  # (a killed test's daemons may take a moment to go: userdel waits for them)
  for _ in 1 2 3 4 5; do
    (($1 == 0)) && getent passwd tailcut >/dev/null && ! userdel tailcut 2>/dev/null && { sleep 1; continue; }
    break
  done
  if (($1 == 0)) && getent group tailcut >/dev/null; then groupdel tailcut 2>/dev/null || true; fi
}
if [[ ${1:-} == --undo ]]; then undo "$2"; exit 0; fi
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
skip() { echo "deb test: $*: skipped"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "needs root (dpkg -i into this machine)"
for exe in dpkg dpkg-deb cpack runuser useradd; do command -v "$exe" >/dev/null || skip "$exe not found"; done
for p in tailcut tailcut-dev; do installed "$p" && skip "a $p package is already on this machine: not touching it"; done
for d in /etc/tailcut /var/lib/tailcut; do [[ -e $d ]] && skip "$d already exists: not touching it"; done
user_existed=0
getent passwd tailcut >/dev/null && user_existed=1

# shellcheck source=tests/script_lib.sh
source "$src/tests/script_lib.sh" deb
cleanup() {
  tc_stop_watchers
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  undo "$user_existed"
  rm -rf "$work"
}
trap cleanup EXIT
tc_on_kill bash "$src/tests/install/deb_test.sh" --undo "$user_existed"

start=$SECONDS
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg" >"$work/cpack.log" 2>&1 || fail "cpack -G DEB failed"
deb=$(ls "$work"/pkg/tailcut_*.deb)
dev=$(ls "$work"/pkg/tailcut-dev_*.deb)
pack_s=$((SECONDS - start))

# What is in the package, before installing it.
dpkg-deb -c "$deb" | awk '{print $6}' >"$work/contents.log"
for f in ./usr/bin/tailcut ./usr/bin/tailcut-scheduler ./usr/bin/tailcut-executor \
         ./usr/lib/systemd/system/tailcut-scheduler.service ./usr/lib/systemd/system/tailcut-executor@.service \
         ./etc/tailcut/scheduler.toml ./etc/tailcut/executor-local.toml ./etc/tailcut/prometheus/tailcut-rules.yml; do
  grep -qxF "$f" "$work/contents.log" || fail "$f is not in $(basename "$deb")"
done
if grep -q '^./usr/include/' "$work/contents.log"; then fail "headers in the runtime package (they belong to tailcut-dev)"; fi
dpkg-deb -c "$dev" >"$work/dev-contents.log"  # to a file: grep -q would end the pipe early
grep -q '/usr/include/tailcut/client/client.h$' "$work/dev-contents.log" || fail "tailcut-dev lacks the client header"
[[ $(dpkg-deb -f "$deb" Depends) == *libzmq5* ]] || fail "Depends lacks libzmq5: $(dpkg-deb -f "$deb" Depends)"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles >"$work/conffiles.log" || fail "no conffiles"
[[ $(wc -l <"$work/conffiles.log") == 3 ]] || fail "conffiles: $(cat "$work/conffiles.log")"

dpkg -i "$deb" >"$work/dpkg-install.log" 2>&1 || fail "dpkg -i failed"
[[ $(command -v tailcut-scheduler) == /usr/bin/tailcut-scheduler ]] || fail "tailcut-scheduler is not /usr/bin's"
version=$(/usr/bin/tailcut-scheduler --version) || fail "tailcut-scheduler --version failed"
grep -q '^ExecStart=/usr/bin/tailcut-scheduler .*/etc/tailcut/scheduler.toml$' \
  /usr/lib/systemd/system/tailcut-scheduler.service || fail "the unit does not start /usr/bin/tailcut-scheduler"
grep -q '^ExecStart=/usr/bin/tailcut-executor .*/etc/tailcut/executor-%i.toml$' \
  /usr/lib/systemd/system/tailcut-executor@.service || fail "the unit does not start /usr/bin/tailcut-executor"
getent passwd tailcut >/dev/null || fail "postinst made no tailcut user"
[[ $(stat -c '%U:%G %a' /var/lib/tailcut) == "tailcut:tailcut 750" ]] || fail "/var/lib/tailcut: $(stat -c '%U:%G %a' /var/lib/tailcut)"
[[ $(stat -c '%U:%G' /etc/tailcut) == "root:tailcut" ]] || fail "/etc/tailcut: $(stat -c '%U:%G' /etc/tailcut)"

# As the units run them: their own ExecStart lines (the executor's as
# instance `local`), as user tailcut, the scheduler in /var/lib/tailcut.
unit_cmd() { sed -n 's/^ExecStart=//p' "/usr/lib/systemd/system/$1" | sed 's/%i/local/g'; }
read -ra scheduler_cmd <<<"$(unit_cmd tailcut-scheduler.service)"
read -ra executor_cmd <<<"$(unit_cmd tailcut-executor@.service)"
[[ -f ${executor_cmd[-1]} ]] || fail "the executor unit's config ${executor_cmd[-1]} (instance local) is not installed"
base=$tc_port_base
ex=tcp://127.0.0.1:$base cl=tcp://127.0.0.1:$((base + 1))
(cd /var/lib/tailcut && exec runuser -u tailcut -- "${scheduler_cmd[@]}" \
  --executor-endpoint "$ex" --client-endpoint "$cl" --http-listen "127.0.0.1:$((base + 2))") >"$work/scheduler.log" 2>&1 &
pids+=($!)
(cd /tmp && exec runuser -u tailcut -- "${executor_cmd[@]}" --scheduler "$ex" --slots 2) >"$work/executor.log" 2>&1 &
pids+=($!)
tc_on_kill kill -TERM "${pids[@]}"
status=$(/usr/bin/tailcut submit --kernel noop --tasks 10 --wait --json --scheduler "$cl") || fail "the job failed: $status"
[[ $status == *'"state":"JOB_SUCCEEDED"'* && $status == *'"committed":10'* ]] || fail "unexpected status: $status"
journal=/var/lib/tailcut/tailcut-state/journal.db
[[ $(stat -c %U "$journal" 2>/dev/null) == tailcut ]] || fail "no journal of user tailcut at $journal"
for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
wait "${pids[@]}" 2>/dev/null || true
pids=()

dpkg -r tailcut >"$work/dpkg-remove.log" 2>&1 || fail "dpkg -r failed"
[[ ! -e /usr/bin/tailcut-scheduler ]] || fail "dpkg -r left /usr/bin/tailcut-scheduler"
[[ -f $journal ]] || fail "dpkg -r removed the journal"
[[ -f /etc/tailcut/scheduler.toml ]] || fail "dpkg -r removed the configs"
[[ $(dpkg-query -W -f='${Status}' tailcut) == "deinstall ok config-files" ]] || fail "after dpkg -r: $(dpkg-query -W -f='${Status}' tailcut)"
dpkg --purge tailcut >"$work/dpkg-purge.log" 2>&1 || fail "dpkg --purge failed"
[[ ! -e /var/lib/tailcut ]] || fail "dpkg --purge left /var/lib/tailcut"
[[ ! -e /etc/tailcut ]] || fail "dpkg --purge left /etc/tailcut"
installed tailcut && fail "tailcut still known to dpkg after --purge"
echo "deb test: ok ($(basename "$deb") $(du -k "$deb" | cut -f1) KiB, $(basename "$dev"); cpack ${pack_s} s; $version;" \
  "installed, ran 10 tasks as user tailcut, dpkg -r kept the journal, --purge removed it)"
