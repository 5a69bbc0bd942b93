#!/usr/bin/env python3
"""Maps a Python function over 1,000 items on warm Python workers, with one
executor slowed 5x, and says how many copies won.

    PYTHONPATH=python python3 python/examples/map.py

Starts a local cluster from build/bin: a scheduler and 3 executors started
with --allow-python, the third with --slowdown 5 (every task on it takes 5x
longer: fault injection, docs/EXECUTOR.md). The function is idempotent, so
the scheduler may copy its slow attempts; the first result of each task
wins. With $TAILCUT_SCHEDULER set it uses that scheduler instead (its
executors need --allow-python and this Python's major.minor).
"""

import argparse
import contextlib
import os
import sys
import time

import tailcut


WORK_S = 0.03  # per item: 30 ms, 150 ms on the slow executor (policies judge attempts from 100 ms on)


def steps(n):
    """Steps of the Collatz sequence from n + 1 down to 1."""
    count, n = 0, n + 1
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        count += 1
    return count


@tailcut.idempotent
def collatz_steps(n):
    """steps(n) after a fixed wait standing for real work (a sleep: this
    machine's CPUs are not the point)."""
    time.sleep(WORK_S)
    return steps(n)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=1000, help="items to map over (default 1000)")
    ap.add_argument("--slowdown", type=float, default=5.0, help="slowdown of the slow executor (default 5)")
    args = ap.parse_args()

    with contextlib.ExitStack() as stack:
        if os.environ.get("TAILCUT_SCHEDULER"):
            client = stack.enter_context(tailcut.Client())
        else:
            print(f"starting a local cluster: scheduler + 2 executors + 1 slowed {args.slowdown:g}x (--allow-python)")
            cluster = stack.enter_context(tailcut.LocalCluster(executors=2, slots=2, allow_python=True))
            cluster.add_executor("--slowdown", str(args.slowdown), "--name", "slow")
            client = stack.enter_context(cluster.client())
        t0 = time.monotonic()
        futures = client.map(collatz_steps, range(args.items))
        results = client.gather(futures)
        elapsed = time.monotonic() - t0
        expected = [steps(n) for n in range(args.items)]  # here, without the wait
        print("results in order:", results[:10], "...", results[-3:])
        jobs = sorted({f.job_id for f in futures})
        statuses = [client.status(j) for j in jobs]
        copies = sum(s.copies for s in statuses)
        attempts = sum(s.attempts for s in statuses)
        relaunched = attempts - args.items - copies - sum(s.failed_attempts for s in statuses)
        names = {e.executor_id: e.name for e in client.executors()}
        by_executor = {}
        for f in futures:
            name = names.get(f.executor_id, str(f.executor_id))
            by_executor[name] = by_executor.get(name, 0) + 1
        won = sum(f.copy for f in futures)
        print(f"{args.items} items in {elapsed:.2f} s: {attempts} attempts, {copies} copies launched, "
              f"{won} copies won (the task's result came from its copy), {relaunched} slow attempts "
              "cancelled and relaunched")
        print("results per executor:", ", ".join(f"{n} {c}" for n, c in sorted(by_executor.items())))
        if results != expected:
            print("map.py: results differ from a local run", file=sys.stderr)
            return 1
        print("results match a local run of the function")
        return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except tailcut.TailcutError as e:
        print(f"map.py: {e}", file=sys.stderr)
        sys.exit(1)
