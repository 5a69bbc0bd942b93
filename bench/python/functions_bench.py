#!/usr/bin/env python3
"""Python functions as tasks, side by side with Dask in one run
(docs/benchmarks/python.md, "Python functions against Dask").

    PYTHONPATH=python /usr/bin/python3 bench/python/functions_bench.py              # ~2 min
    PYTHONPATH=python /usr/bin/python3 bench/python/functions_bench.py --fanouts 1000   # a p99 of 1,000 rounds

Every system gets the same --workers single-threaded worker processes
(default 4, the side-by-side of issue 33): Dask a
distributed.LocalCluster(n_workers=W, threads_per_worker=1,
processes=True); tailcut W/--slots executors of --slots slots (default 1:
single-slot executors, one warm Python worker each), once with `--policy
none` and once with the default chain. All three run at once and are
measured in turn, run by run and round by round (ABCABC...), so a change
of the machine's load falls on all of them alike.

1. Throughput: --runs runs of --tasks no-op function tasks, map() then
   gather(): tasks/s, the median of the runs with its 95% bootstrap interval.
2. Fan-outs: --fanouts rounds of 16 tasks of --task-ms each, every
   execution delayed to 10x with probability 5% (drawn inside the
   function, per execution: a copy draws afresh); p50/p99 of a round's
   wall time, submit to the last result, with bootstrap intervals. Tasks
   are declared idempotent, so the default chain may copy them.

Needs python3-distributed (Debian; TAILCUT_SETUP_DASK=1 scripts/setup.sh)
for the Dask rows; without it they are skipped with a note. Live figures
mean something only on an otherwise idle machine (load < 1.5).
"""

import argparse
import contextlib
import os
import random
import statistics
import sys
import time

import tailcut
from _stats import ci_text, percentile  # bench/python/_stats.py (the script's folder is on sys.path)


def noop(x):
    return x


def short_task(i, ms, delay_p, factor):
    """A task of `ms` milliseconds; 10x longer with probability delay_p
    (per execution: a straggling attempt, not a heavy task)."""
    t = ms * (factor if random.random() < delay_p else 1)
    time.sleep(t / 1000.0)
    return i


class TailcutSystem:
    def __init__(self, stack, policy, args, bin_dir=None, label=""):
        flags = [] if policy == "default" else ["--policy", policy]
        self.name = f"tailcut {policy}{label}"
        cluster = stack.enter_context(tailcut.LocalCluster(
            executors=args.workers // args.slots, slots=args.slots, allow_python=True, scheduler_flags=flags,
            bin_dir=bin_dir))
        self.c = stack.enter_context(cluster.client(timeout=60))
        self.task = tailcut.task(short_task, idempotent=True)

    def map_gather(self, fn, *iterables):
        return self.c.gather(self.c.map(fn, *iterables))

    def fan_out(self, n, args):
        return self.c.gather(self.c.map(self.task, range(n), [args.task_ms] * n, [args.delay_p] * n,
                                        [args.factor] * n))


class DaskSystem:
    name = "dask"

    def __init__(self, stack, args):
        import logging

        import distributed

        logging.getLogger("distributed").setLevel(logging.ERROR)
        cluster = stack.enter_context(distributed.LocalCluster(
            n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None,
            silence_logs=logging.ERROR))
        self.c = stack.enter_context(distributed.Client(cluster))

    def map_gather(self, fn, *iterables):
        return self.c.gather(self.c.map(fn, *iterables, pure=False))

    def fan_out(self, n, args):
        return self.c.gather(self.c.map(short_task, range(n), [args.task_ms] * n, [args.delay_p] * n,
                                        [args.factor] * n, pure=False))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=4, help="worker processes for each system (default 4)")
    ap.add_argument("--slots", type=int, default=1, help="slots per tailcut executor (default 1)")
    ap.add_argument("--tasks", type=int, default=5000, help="no-op tasks per throughput run (default 5000)")
    ap.add_argument("--runs", type=int, default=5, help="throughput runs per system (default 5)")
    ap.add_argument("--fanouts", type=int, default=200, help="fan-outs of 16 tasks per system (default 200)")
    ap.add_argument("--task-ms", type=float, default=50.0, help="run time of a short task (default 50 ms)")
    ap.add_argument("--delay-p", type=float, default=0.05, help="probability of a delayed execution (default 0.05)")
    ap.add_argument("--factor", type=float, default=10.0, help="delay factor (default 10)")
    ap.add_argument("--policies", default="none,default", help="tailcut's policies to run (default none,default)")
    ap.add_argument("--no-dask", action="store_true", help="leave Dask out")
    ap.add_argument("--baseline-bin", default="",
                    help="also run the daemons of another build (its bin folder; its executors run the Python "
                         "workers of its own source tree) as 'tailcut POLICY (baseline)': before/after in one run")
    args = ap.parse_args()
    if args.slots < 1 or args.workers < args.slots or args.workers % args.slots:
        ap.error("--workers must be a multiple of --slots")
    if min(args.tasks, args.runs, args.fanouts) < 1:
        ap.error("--tasks, --runs and --fanouts must be >= 1")
    policies = [p for p in args.policies.split(",") if p]
    if not policies or not set(policies) <= {"none", "default"}:
        ap.error("--policies: a comma-separated list of none, default")

    with contextlib.ExitStack() as stack:
        systems = []
        try:
            if not args.no_dask:
                systems.append(DaskSystem(stack, args))
        except ImportError:
            print("dask: skipped (python3-distributed is not installed)")
        systems += [TailcutSystem(stack, p, args) for p in policies]
        if args.baseline_bin:
            systems += [TailcutSystem(stack, p, args, args.baseline_bin, " (baseline)") for p in policies]
        for s in systems:  # warm-up: every worker started, the functions cached, predictors fed
            s.map_gather(noop, range(20 * args.workers))
            for _ in range(5):
                s.fan_out(16, args)
        tput = {s.name: [] for s in systems}
        for _ in range(args.runs):
            for s in systems:
                t0 = time.perf_counter()
                out = s.map_gather(noop, range(args.tasks))
                tput[s.name].append(args.tasks / (time.perf_counter() - t0))
                assert out == list(range(args.tasks))
        rounds = {s.name: [] for s in systems}
        for _ in range(args.fanouts):
            for s in systems:
                t0 = time.perf_counter()
                assert s.fan_out(16, args) == list(range(16))
                rounds[s.name].append(time.perf_counter() - t0)

    load = os.getloadavg()[0]
    print(f"{args.workers} single-threaded worker processes each (tailcut: {args.workers // args.slots} executors x "
          f"{args.slots} slot(s)); {args.runs} runs of {args.tasks} no-op tasks; {args.fanouts} fan-outs of "
          f"16 x {args.task_ms:g} ms, {args.delay_p:.0%} of executions x{args.factor:g}; interleaved; "
          f"load average at the end {load:.2f}")
    print("medians and percentiles with [95% bootstrap interval]")
    width = max(len(s.name) for s in systems)
    print(f"{'system':<{width}} {'no-op tasks/s':>28} {'fan-out p50 ms':>26} {'p99 ms':>28} {'mean ms':>8}")
    med = statistics.median
    for s in systems:
        r = rounds[s.name]
        print(f"{s.name:<{width}} {ci_text(tput[s.name], med, fmt='{:,.0f}'):>28} "
              f"{ci_text(r, lambda v: percentile(v, 50), 1000):>26} {ci_text(r, lambda v: percentile(v, 99), 1000):>28} "
              f"{statistics.mean(r) * 1000:>8.1f}")
    if "dask" in tput:
        best = max(med(tput[f"tailcut {p}"]) for p in policies)
        ratio = best / med(tput["dask"])
        print(f"tailcut / dask no-op tasks/s: {ratio:.1f}x (target >= 10x): {'met' if ratio >= 10 else 'NOT met'}")
        p99 = {n: percentile(r, 99) for n, r in rounds.items()}
        if len(policies) == 2:
            ok = p99["tailcut default"] < p99["dask"] and p99["tailcut default"] < p99["tailcut none"]
            print(f"default p99 below dask's and none's: {'met' if ok else 'NOT met'}")
    for p in policies if args.baseline_bin else ():
        now, before = rounds[f"tailcut {p}"], rounds[f"tailcut {p} (baseline)"]
        print(f"{p}: no-op tasks/s {med(tput[f'tailcut {p}']) / med(tput[f'tailcut {p} (baseline)']):.1f}x the "
              f"baseline's; fan-out p99 {percentile(now, 99) * 1000:.1f} ms vs the baseline's "
              f"{percentile(before, 99) * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
