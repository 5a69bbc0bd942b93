#!/usr/bin/env python3
"""Python functions as tasks, side by side with Dask in one run
(docs/BENCHMARKS.md, "Python functions against Dask").

    PYTHONPATH=python /usr/bin/python3 bench/python/functions_bench.py

Both get the same number of single-threaded worker processes (--workers):
Dask a distributed.LocalCluster(n_workers=W, threads_per_worker=1,
processes=True); tailcut a LocalCluster of W/4 executors with 4 slots each
(--allow-python: one warm Python worker per slot), once with `--policy
none` and once with the default chain.

1. Throughput: --tasks no-op function tasks, map() then gather(): tasks/s.
2. Fan-outs: --fanouts rounds of 16 tasks of --task-ms each, every
   execution delayed to 10x with probability 5% (drawn inside the
   function, per execution: a copy draws afresh); p50/p99 of a round's
   wall time, submit to the last result. Tasks are declared idempotent, so
   the default chain may copy them.

Needs python3-distributed (Debian) for the Dask rows; without it they are
skipped with a note.
"""

import argparse
import random
import statistics
import sys
import time

import tailcut


def noop(x):
    return x


def short_task(i, ms, delay_p, factor):
    """A task of `ms` milliseconds; 10x longer with probability delay_p
    (per execution: a straggling attempt, not a heavy task)."""
    t = ms * (factor if random.random() < delay_p else 1)
    time.sleep(t / 1000.0)
    return i


def percentile(values, p):
    values = sorted(values)
    k = (len(values) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def fanout_rounds(run_round, rounds):
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        run_round()
        times.append(time.perf_counter() - t0)
    return times


def bench_tailcut(policy, args):
    flags = [] if policy == "default" else ["--policy", policy]
    executors = max(1, args.workers // 4)
    with tailcut.LocalCluster(executors=executors, slots=args.workers // executors, allow_python=True,
                              scheduler_flags=flags) as cluster, cluster.client(timeout=60) as c:
        # Warm-up: every worker started (first use), the function cached.
        c.gather(c.map(noop, range(20 * args.workers)))
        t0 = time.perf_counter()
        out = c.gather(c.map(noop, range(args.tasks)))
        tput = args.tasks / (time.perf_counter() - t0)
        assert out == list(range(args.tasks))
        task = tailcut.task(short_task, idempotent=True)
        n = 16

        def one_round():
            res = c.gather(c.map(task, range(n), [args.task_ms] * n, [args.delay_p] * n, [args.factor] * n))
            assert res == list(range(n))

        fanout_rounds(one_round, 5)  # predictors learn the task's run time
        times = fanout_rounds(one_round, args.fanouts)
    return tput, times


def bench_dask(args):
    try:
        import distributed
    except ImportError:
        return None
    import logging

    logging.getLogger("distributed").setLevel(logging.ERROR)
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster) as c:
        c.gather(c.map(noop, range(20 * args.workers), pure=False))
        t0 = time.perf_counter()
        out = c.gather(c.map(noop, range(args.tasks), pure=False))
        tput = args.tasks / (time.perf_counter() - t0)
        assert out == list(range(args.tasks))
        n = 16

        def one_round():
            res = c.gather(c.map(short_task, range(n), [args.task_ms] * n, [args.delay_p] * n, [args.factor] * n,
                                 pure=False))
            assert res == list(range(n))

        fanout_rounds(one_round, 5)
        times = fanout_rounds(one_round, args.fanouts)
    return tput, times


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=16, help="worker processes for each system (default 16)")
    ap.add_argument("--tasks", type=int, default=20000, help="no-op tasks for the throughput row (default 20000)")
    ap.add_argument("--fanouts", type=int, default=200, help="fan-outs of 16 tasks (default 200)")
    ap.add_argument("--task-ms", type=float, default=50.0, help="run time of a short task (default 50 ms)")
    ap.add_argument("--delay-p", type=float, default=0.05, help="probability of a delayed execution (default 0.05)")
    ap.add_argument("--factor", type=float, default=10.0, help="delay factor (default 10)")
    args = ap.parse_args()
    if args.workers < 4 or args.workers % 4:
        ap.error("--workers must be a multiple of 4 (tailcut: executors of 4 slots)")

    rows = []
    dask = bench_dask(args)
    if dask is None:
        print("dask: skipped (python3-distributed is not installed)")
    else:
        rows.append(("dask", *dask))
    for policy in ("none", "default"):
        rows.append((f"tailcut {policy}", *bench_tailcut(policy, args)))

    print(f"{args.workers} single-threaded worker processes each; {args.tasks} no-op tasks; "
          f"{args.fanouts} fan-outs of 16 x {args.task_ms:g} ms, {args.delay_p:.0%} of executions x{args.factor:g}")
    print(f"{'system':<18} {'no-op tasks/s':>14} {'fan-out p50 ms':>15} {'p99 ms':>9} {'mean ms':>9}")
    for name, tput, times in rows:
        print(f"{name:<18} {tput:>14,.0f} {percentile(times, 50) * 1000:>15.1f} {percentile(times, 99) * 1000:>9.1f} "
              f"{statistics.mean(times) * 1000:>9.1f}")
    by = {name: (tput, times) for name, tput, times in rows}
    if "dask" in by:
        t_d, t_n, t_def = by["dask"], by["tailcut none"], by["tailcut default"]
        best = max(t_n[0], t_def[0])
        print(f"tailcut / dask tasks/s: {best / t_d[0]:.1f}x (target >= 10x): {'met' if best >= 10 * t_d[0] else 'NOT met'}")
        p99 = percentile(t_def[1], 99)
        ok = p99 < percentile(t_d[1], 99) and p99 < percentile(t_n[1], 99)
        p50_ok = percentile(t_def[1], 50) <= percentile(t_n[1], 50)
        print(f"default p99 below dask's and none's: {'met' if ok else 'NOT met'}; "
              f"default p50 no worse than none's: {'met' if p50_ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
