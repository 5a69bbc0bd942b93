#!/usr/bin/env python3
"""Runs a fan-out job and prints its results as tasks commit.

    PYTHONPATH=python python3 python/examples/fanout.py   # the source tree's package
    python3 python/examples/fanout.py                     # after `pip install ./python`

With $TAILCUT_SCHEDULER set (and $TAILCUT_KEY_FILE, $TAILCUT_SCHEDULER_KEY
for a scheduler with keys) it submits there. Otherwise it starts a local
cluster (a scheduler and 2 executors on free loopback ports, from
$TAILCUT_BIN, build/bin or PATH; `--keys` gives them fresh CURVE keys), runs
the job on it, and stops it.
"""

import argparse
import contextlib
import os
import sys

try:
    import tailcut
except ImportError as e:  # its message says what to install, in one line
    sys.exit(f"fanout.py: {e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=8, help="tasks in the job (default 8)")
    ap.add_argument("--n", type=int, default=64, help="matrix size of each matmul task (default 64)")
    ap.add_argument("--keys", action="store_true", help="local cluster: run it with fresh CURVE keys")
    args = ap.parse_args()

    with contextlib.ExitStack() as stack:
        if os.environ.get("TAILCUT_SCHEDULER"):
            client = stack.enter_context(tailcut.Client())  # endpoint and keys from the environment
        else:
            cluster = stack.enter_context(tailcut.LocalCluster(executors=2, keys=args.keys))
            print(f"started a local cluster (tailcut-scheduler + 2 executors from {cluster.bin_dir})")
            client = stack.enter_context(cluster.client())
        print(f"scheduler {client.endpoint}: {len(client.executors())} executors")

        # Each task multiplies two seeded n x n matrices and returns a checksum.
        job = client.submit(tailcut.fanout("matmul", f"n={args.n}", tasks=args.tasks, stream_results=True))
        print(f"submitted job {job}: {args.tasks} x matmul n={args.n}")
        for r in client.as_completed(job):
            print(f"  task {r.task_index}: {r.text} (executor {r.executor_id}, {r.run_s * 1000:.2f} ms)")
        final = client.status(job)
        print(f"job {job} {final.state}: {final.committed}/{final.tasks} tasks, {final.attempts} attempts, "
              f"{final.copies} copies")
        return 0 if final.succeeded else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except tailcut.TailcutError as e:
        print(f"fanout.py: {e}", file=sys.stderr)
        sys.exit(1)
