#!/usr/bin/env python3
"""Where a Python no-op's time goes (docs/benchmarks/python.md, "Batches to
the workers"): runs --tasks no-op functions on --executors single-slot
executors and prints each process's CPU time (from /proc, before and
after) per task of the whole run: the client (this process), the
scheduler, the executors, their Python workers.

    PYTHONPATH=python /usr/bin/python3 bench/python/cpu_per_task.py                 # ~10 s
    PYTHONPATH=python /usr/bin/python3 bench/python/cpu_per_task.py --bin-dir OTHER/build/bin

A per-task figure of one executor is its CPU over all tasks: multiply by
the executors for its cost per task it ran. Meaningful beside a figure of
the same run only (the load moves them).
"""

import argparse
import os
import sys
import time

import tailcut


def noop(x):
    return x


def cpu_seconds():
    """{pid: (command line, user+system CPU seconds)} of this process and its descendants."""
    procs, me, tick = {}, os.getpid(), os.sysconf("SC_CLK_TCK")
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{p}/stat") as f:
                stat = f.read()
            with open(f"/proc/{p}/cmdline") as f:
                cmd = f.read().replace("\0", " ")[:70]
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        procs[int(p)] = (int(fields[1]), cmd, (int(fields[11]) + int(fields[12])) / tick)
    out = {}
    for pid, (ppid, cmd, cpu) in procs.items():
        up = pid
        while up not in (me, 0, 1) and up in procs:
            up = procs[up][0]
        if up == me:
            out[pid] = (cmd, cpu)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=20000, help="no-op tasks (default 20000)")
    ap.add_argument("--executors", type=int, default=4, help="single-slot executors (default 4)")
    ap.add_argument("--policy", default="none", help="the scheduler's --policy (default none)")
    ap.add_argument("--bin-dir", default=None, help="the daemons' folder (default: this tree's build)")
    args = ap.parse_args()
    with tailcut.LocalCluster(executors=args.executors, slots=1, allow_python=True, bin_dir=args.bin_dir,
                              scheduler_flags=["--policy", args.policy]) as cluster:
        with cluster.client(timeout=60) as c:
            c.gather(c.map(noop, range(200)))  # warm: workers started, the function cached
            before, t0 = cpu_seconds(), time.perf_counter()
            assert c.gather(c.map(noop, range(args.tasks))) == list(range(args.tasks))
            wall, after = time.perf_counter() - t0, cpu_seconds()
    print(f"{args.tasks} no-ops on {args.executors} single-slot executors: {args.tasks / wall:,.0f} tasks/s, "
          f"load average {os.getloadavg()[0]:.2f}")
    total = 0.0
    for pid in sorted(after):
        spent = after[pid][1] - before.get(pid, ("", 0.0))[1]
        total += spent
        if spent > 0:
            print(f"  {spent / args.tasks * 1e6:7.1f} us/task  {after[pid][0]}")
    print(f"  {total / args.tasks * 1e6:7.1f} us/task in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
