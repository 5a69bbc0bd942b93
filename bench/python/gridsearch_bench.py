#!/usr/bin/env python3
"""An unchanged scikit-learn GridSearchCV on 4 single-slot workers, one of
them 5x slow, side by side in one run (docs/benchmarks/python.md, "Grid search
with a slow executor"): tailcut's joblib backend under the `default` chain
and under `none`, and Dask's joblib backend with 4 workers.

    PYTHONPATH=python /usr/bin/python3 bench/python/gridsearch_bench.py            # ~3 min
    PYTHONPATH=python /usr/bin/python3 bench/python/gridsearch_bench.py --runs 9

The slowdown is the same in both systems: the estimator is wrapped in
Stretched, whose fit sleeps 4x its own fit time (5x in all) in a process
whose environment has TAILCUT_BENCH_SLOW=1; one tailcut executor (its
Python workers inherit it) and one Dask worker (a Nanny with that env)
have it. The search: SVC on load_digits (ships with scikit-learn),
--candidates of a C x gamma grid, 5-fold: every fit is a joblib call,
batched by joblib's auto-batching in both systems.

The systems run at once and are measured in turn, run by run; the table
gives the median wall time of --runs searches with its 95% bootstrap
interval, and checks issue 33's targets: default <= 0.7x Dask, <= 0.7x none.
Live figures mean something only on an otherwise idle machine (load < 1.5).
"""

import argparse
import contextlib
import os
import statistics
import sys
import time

import joblib
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV
from sklearn.svm import SVC

import tailcut
from _stats import bootstrap_ci, ci_text  # bench/python/_stats.py

SLOW_ENV = "TAILCUT_BENCH_SLOW"
STRETCH = 5.0


class Stretched(ClassifierMixin, BaseEstimator):
    """`estimator`, whose fit takes STRETCH times as long in a process
    marked with $TAILCUT_BENCH_SLOW (a slow machine, the same in both
    systems)."""

    def __init__(self, estimator=None):
        self.estimator = estimator

    def fit(self, X, y):
        t0 = time.perf_counter()
        self.estimator_ = clone(self.estimator).fit(X, y)
        if os.environ.get(SLOW_ENV) == "1":
            time.sleep((STRETCH - 1) * (time.perf_counter() - t0))
        self.classes_ = self.estimator_.classes_
        return self

    def predict(self, X):
        return self.estimator_.predict(X)


def grid(candidates):
    cs = [0.3, 1, 3, 10, 30, 100]
    gammas = [1e-4, 3e-4, 1e-3, 3e-3]
    pairs = [(c, g) for c in cs for g in gammas][:candidates]
    return [{"estimator__C": [c], "estimator__gamma": [g]} for c, g in pairs]


def search(X, y, args):
    return GridSearchCV(Stretched(SVC()), grid(args.candidates), cv=5, n_jobs=-1).fit(X, y)


def tailcut_system(stack, policy):
    flags = [] if policy == "default" else ["--policy", policy]
    cluster = stack.enter_context(tailcut.LocalCluster(executors=3, slots=1, allow_python=True,
                                                       scheduler_flags=flags))
    cluster.add_executor(allow_python=True, env={SLOW_ENV: "1"})
    ex = stack.enter_context(tailcut.Executor(cluster=cluster))
    return f"tailcut {policy}", lambda: joblib.parallel_backend("tailcut", executor=ex)


def dask_system(stack):
    import logging

    import distributed
    from distributed.deploy.spec import SpecCluster

    logging.getLogger("distributed").setLevel(logging.ERROR)
    workers = {i: {"cls": distributed.Nanny, "options": {"nthreads": 1, "env": {SLOW_ENV: "1"} if i == 3 else {}}}
               for i in range(4)}
    cluster = stack.enter_context(SpecCluster(
        workers=workers, scheduler={"cls": distributed.Scheduler, "options": {"dashboard_address": None}},
        silence_logs=logging.ERROR))
    client = stack.enter_context(distributed.Client(cluster))
    client.wait_for_workers(4)
    return "dask", lambda: joblib.parallel_backend("dask")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="searches per system (default 5)")
    ap.add_argument("--candidates", type=int, default=24, help="grid candidates, <= 24 (default 24: 120 fits)")
    args = ap.parse_args()
    if not 1 <= args.candidates <= 24 or args.runs < 1:
        ap.error("--candidates must be in 1..24 and --runs >= 1")
    X, y = load_digits(return_X_y=True)
    reference = None
    with contextlib.ExitStack() as stack:
        systems = []
        try:
            systems.append(dask_system(stack))
        except ImportError:
            print("dask: skipped (python3-distributed is not installed)")
        systems += [tailcut_system(stack, p) for p in ("default", "none")]
        walls = {name: [] for name, _ in systems}
        for run in range(args.runs + 1):  # run 0: warm-up (workers import scikit-learn)
            for name, backend in systems:
                t0 = time.perf_counter()
                with backend():
                    best = search(X, y, args).best_params_
                if run:
                    walls[name].append(time.perf_counter() - t0)
                reference = reference or best
                assert best == reference, (name, best, reference)
    print(f"GridSearchCV(Stretched(SVC())), load_digits, {args.candidates} candidates x 5 folds; 4 single-slot "
          f"workers, one {STRETCH:g}x slow; {args.runs} runs each, interleaved; load average at the end "
          f"{os.getloadavg()[0]:.2f}; best_params_ {reference} in every run")
    print(f"{'system':<16} {'wall s, median [95% CI]':>26}")
    med = statistics.median
    for name, w in walls.items():
        print(f"{name:<16} {ci_text(w, med, fmt='{:.2f}'):>26}")
    d = walls["tailcut default"]
    for other in ("dask", "tailcut none"):
        if other in walls:
            ratio = med(d) / med(walls[other])
            lo, hi = bootstrap_ci(list(zip(d, walls[other])), lambda v: med([a for a, _ in v]) / med([b for _, b in v]))
            print(f"default / {other}: {ratio:.2f}x [{lo:.2f}, {hi:.2f}] (target <= 0.7x): "
                  f"{'met' if ratio <= 0.7 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
