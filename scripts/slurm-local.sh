#!/usr/bin/env bash
# A one-node Slurm on this machine, for tests (ctest slurm_real,
# docs/DEPLOY.md): munged, slurmctld and slurmd from Debian's munge and
# slurm-wlm (22.05), every file (config, key, sockets, state, logs) under
# DIR, on free ports, so it touches nothing in /etc and stops with DIR.
# Needs root (slurmd runs jobs as their submitter).
#
#   scripts/slurm-local.sh start DIR   # prints: export SLURM_CONF=DIR/slurm.conf
#   scripts/slurm-local.sh stop DIR    # stops the three daemons (by their pid files)
#
# Exit 77 when Slurm or munge is not installed or the daemons cannot start
# here (a container without root, say): the caller's test skips. The node
# has this machine's CPUs and memory (slurmd -C); no cgroups
# (proctrack/linuxproc, task/none), which a container seldom allows.
set -euo pipefail

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -eq 2 ]] || usage
cmd=$1 dir=$2
skip() { echo "slurm-local: $*: skipped" >&2; exit 77; }

# Running: a zombie is not (the daemons fork away from their starter, and
# a container's PID 1 may never reap them).
alive() { kill -0 "$1" 2>/dev/null && [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]; }
stop() {
  # slurmd first (it may hold job steps), then the controller, then munge.
  local name pid
  for name in slurmd slurmctld munged; do
    [[ -f $dir/$name.pid ]] || continue
    pid=$(cat "$dir/$name.pid" 2>/dev/null || true)
    [[ $pid =~ ^[0-9]+$ ]] || continue
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 100); do alive "$pid" || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$dir/$name.pid"
  done
}

case $cmd in
  stop) stop; exit 0 ;;
  start) ;;
  *) usage ;;
esac

for exe in munged slurmctld slurmd sbatch srun scancel squeue; do
  command -v "$exe" >/dev/null 2>&1 || [[ -x /usr/sbin/$exe ]] ||
    skip "$exe not found (apt-get install slurm-wlm munge, or TAILCUT_SETUP_SLURM=1 scripts/setup.sh)"
done
[[ $(id -u) -eq 0 ]] || skip "needs root to run slurmd"
PATH=$PATH:/usr/sbin
mkdir -p "$dir"/{state,spool,log}
dir=$(cd "$dir" && pwd)
# On failure the daemons started so far are stopped again.
trap 'rc=$?; if ((rc != 0)); then stop; fi' EXIT

# munge: its own key and socket. munged refuses a key others can read.
dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
chmod 0600 "$dir/munge.key"
chmod 0700 "$dir"
munged --force --socket="$dir/munge.sock" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
  --log-file="$dir/log/munged.log" --seed-file="$dir/munged.seed" ||
  skip "munged did not start: $(tail -3 "$dir/log/munged.log" 2>/dev/null)"

node=$(hostname -s)
node_line=$(slurmd -C | head -1)  # NodeName=HOST CPUs=... RealMemory=...
[[ $node_line == NodeName=* ]] || skip "slurmd -C printed no node line"
port_base=$((30000 + RANDOM % 20000))
cat >"$dir/slurm.conf" <<EOF
ClusterName=tailcut-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port_base
SlurmdPort=$((port_base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
KillWait=10
$node_line NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
# Slurm 22.05 reads cgroup.conf even with cgroups off; an empty one keeps
# it from looking in /etc/slurm.
: >"$dir/cgroup.conf"
export SLURM_CONF=$dir/slurm.conf

slurmctld -i || skip "slurmctld did not start: $(tail -3 "$dir/log/slurmctld.log" 2>/dev/null)"
slurmd || skip "slurmd did not start: $(tail -3 "$dir/log/slurmd.log" 2>/dev/null)"

# Ready once the node is idle (slurmd registered); the deadline bounds a
# broken setup only.
for _ in $(seq 300); do
  state=$(sinfo -h -n "$node" -o %T 2>/dev/null || true)
  [[ $state == idle* ]] && break
  sleep 0.1
done
[[ $state == idle* ]] || skip "node $node is '${state:-not listed}', not idle: $(tail -3 "$dir/log/slurmd.log" 2>/dev/null)"
echo "export SLURM_CONF=$dir/slurm.conf"
