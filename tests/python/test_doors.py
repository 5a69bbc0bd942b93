"""The doors Python users already use (docs/PYTHON.md): tailcut.Executor
beyond CPython's own tests (test_cpython_futures.py), asyncio
(AsyncClient, awaitable futures), progress bars, and bad input refused at
each door with a clear error."""

import asyncio
import io
import math
import os
import socket
import sys
import threading
import time

import cloudpickle
import pytest

import tailcut
from tailcut import _progress

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # not importable on the workers


def square(x):
    return x * x


def boom(x):
    raise ValueError(f"no {x}")


@pytest.fixture(scope="module")
def cluster(python_cluster):
    return python_cluster


@pytest.fixture
def ex(cluster):
    with tailcut.Executor(cluster=cluster) as e:
        yield e


# ------------------------------------------------------------ Executor --
def test_futures_are_concurrent_futures_and_raise_with_the_remote_traceback(ex):
    import concurrent.futures as cf

    f = ex.submit(square, 7)
    assert isinstance(f, cf.Future) and f.result(timeout=30) == 49
    g = ex.submit(boom, 3)
    with pytest.raises(ValueError, match="no 3") as info:
        g.result(timeout=30)
    assert isinstance(info.value.__cause__, tailcut.RemoteTraceback)
    assert "in boom" in info.value.__cause__.text and 'raise ValueError(f"no {x}")' in info.value.__cause__.text
    done, _ = cf.wait([ex.submit(square, i) for i in range(50)], timeout=60)
    assert sorted(d.result() for d in done) == [i * i for i in range(50)]


def test_map_batches_submits_into_few_jobs(ex):
    # 200 items, submitted faster than a round trip: the thread sends what
    # is queued as one job per turn, not 200 jobs.
    jobs_before = len(ex._client._submitted_keys)
    assert list(ex.map(square, range(200), timeout=60)) == [i * i for i in range(200)]
    assert len(ex._client._submitted_keys) - jobs_before < 20


def test_max_workers_caps_the_tasks_in_flight(cluster):
    with tailcut.Executor(2, cluster=cluster) as e:
        fs = [e.submit(time.sleep, 0.3) for _ in range(6)]
        time.sleep(0.1)
        assert sum(1 for f in fs if f.running() or f.done()) <= 2
        e.shutdown(cancel_futures=True)
    assert any(f.cancelled() for f in fs) and all(f.done() for f in fs)


def test_local_cluster_when_given_no_scheduler(monkeypatch):
    monkeypatch.delenv("TAILCUT_SCHEDULER", raising=False)
    with tailcut.Executor(2) as e:
        assert e.cluster is not None and e.slots() == 2
        assert e.submit(square, 9).result(timeout=60) == 81
    with tailcut.Client(e.cluster.client_endpoint, timeout=0.5) as c, pytest.raises(tailcut.Unavailable):
        c.executors()  # the cluster stopped with the executor


# ------------------------------------------------------------- bad input --
def test_a_function_that_does_not_pickle_is_refused_at_submit(ex, cluster):
    lock = threading.Lock()
    with pytest.raises(tailcut.InvalidArgument, match="does not pickle.*lock"):
        ex.submit(lambda: lock.acquire())
    with cluster.client() as c, pytest.raises(tailcut.InvalidArgument, match="does not pickle"):
        c.submit(lambda: lock.acquire())


def test_a_lambda_over_a_socket_is_refused_with_what_to_do(ex):
    s = socket.socket()
    try:
        with pytest.raises(tailcut.InvalidArgument, match=r"does not pickle \(TypeError: cannot pickle 'socket'.*"
                                                          r"create those inside the function"):
            ex.submit(lambda: s.recv(1))
        with pytest.raises(tailcut.InvalidArgument, match="arguments of square do not pickle"):
            ex.submit(square, s)
    finally:
        s.close()


def test_a_nan_timeout_is_refused_everywhere(ex, cluster):
    f = ex.submit(square, 2)
    for call in (lambda: f.result(timeout=math.nan), lambda: f.exception(timeout=math.nan),
                 lambda: ex.map(square, [1], timeout=math.nan), lambda: ex.map(square, [1], timeout="1")):
        with pytest.raises(tailcut.InvalidArgument, match="timeout must be None or a number of seconds"):
            call()
    assert f.result(timeout=30) == 4
    with cluster.client() as c:
        g = c.submit(square, 3)
        for call in (lambda: g.result(timeout=math.nan), lambda: tailcut.gather([g], timeout=math.nan),
                     lambda: tailcut.as_completed([g], timeout=math.nan)):
            with pytest.raises(tailcut.InvalidArgument, match="timeout must be None"):
                call()
        assert g.result(timeout=30) == 9


def test_submit_after_shutdown_and_bad_arguments(cluster):
    e = tailcut.Executor(cluster=cluster)
    e.shutdown()
    with pytest.raises(RuntimeError, match="cannot schedule new futures after shutdown"):
        e.submit(square, 1)
    for bad in (0, -1):
        with pytest.raises(ValueError, match="max_workers must be greater than 0"):
            tailcut.Executor(bad, cluster=cluster)
    with pytest.raises(TypeError, match="max_workers must be an int"):
        tailcut.Executor(2.5, cluster=cluster)
    with tailcut.Executor(cluster=cluster) as e2:
        with pytest.raises(ValueError, match="chunksize must be >= 1"):
            e2.map(square, [1], chunksize=0)
        with pytest.raises(tailcut.InvalidArgument, match="a task is a function"):
            e2.submit(42)


# --------------------------------------------------------------- asyncio --
def _lag_bench():
    """bench/python/asyncio_lag.py, whose round this test asserts."""
    import importlib.util
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "bench" / "python"
    sys.path.insert(0, str(folder))  # its _stats
    spec = importlib.util.spec_from_file_location("asyncio_lag", folder / "asyncio_lag.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_asyncio_1000_concurrent_awaits_keep_the_loop_responsive(cluster):
    """1,000 coroutines each await a task while a ticker measures how long
    the loop was kept from it (bench/python/asyncio_lag.py's round). While
    they are awaited (every submit done): in CPU time of the loop's thread
    (what this client costs the loop; a loaded machine's preemption is not
    in it) under 20 ms, and in wall time under a generous 250 ms. The turn
    that starts all 1,000 at once (asyncio's 1,000 tasks and tailcut's
    1,000 submits, ~8 us each) under 50 ms of CPU. The live wall-time
    figures: that script (docs/benchmarks/python.md)."""
    bench = _lag_bench()

    async def main():
        async with tailcut.AsyncClient(cluster=cluster) as c:
            results, start, awaited = await bench.one_round(c, 1000, square)
            assert await c.map(square, range(10)) == [i * i for i in range(10)]
            assert await asyncio.gather(c.submit(square, 2), c.submit(square, 3)) == [4, 9]
            seen = [f async for f in c.as_completed([c.submit(square, i) for i in range(5)])]
            assert sorted(f.result() for f in seen) == [0, 1, 4, 9, 16]
            with pytest.raises(ValueError, match="no 1"):
                await c.submit(boom, 1)
            return results, start, awaited

    results, start, awaited = asyncio.run(main())
    assert results == [i * i for i in range(1000)]
    assert len(awaited) > 5
    worst_wall, worst_cpu = max(w for _, w, _ in awaited), max(c for _, _, c in awaited)
    assert worst_cpu < 0.020, f"while awaited, the loop's thread was busy {worst_cpu * 1000:.1f} ms between ticks"
    assert worst_wall < 0.250, f"while awaited, the loop lagged {worst_wall * 1000:.1f} ms"
    launch_cpu = max(c for _, _, c in start + awaited)
    assert launch_cpu < 0.050, f"starting 1,000 awaits took {launch_cpu * 1000:.1f} ms of the loop's thread"


def test_executor_futures_are_awaitable(ex):
    async def main():
        return await ex.submit(square, 4), await asyncio.gather(ex.submit(square, 5), ex.submit(square, 6))

    assert asyncio.run(main()) == (16, [25, 36])


def test_async_client_needs_start():
    c = tailcut.AsyncClient()
    with pytest.raises(RuntimeError, match="not started"):
        c.submit(square, 1)


# -------------------------------------------------------------- progress --
def test_progress_is_off_unless_interactive(monkeypatch):
    monkeypatch.delenv("TAILCUT_PROGRESS", raising=False)
    monkeypatch.setattr("sys.stderr", io.StringIO())  # not a terminal
    assert not _progress.wanted(None)
    assert _progress.wanted(True) and not _progress.wanted(False)
    monkeypatch.setenv("TAILCUT_PROGRESS", "1")
    assert _progress.wanted(None)
    with pytest.raises(TypeError, match="progress must be True, False or None"):
        _progress.wanted("yes")


def test_progress_plain_line_counts_every_task(ex, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_tqdm(name, *args, **kwargs):
        if name.startswith("tqdm"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    assert list(ex.map(square, range(30), progress=True)) == [i * i for i in range(30)]
    assert err.getvalue().rstrip().split("\r")[-1].startswith("tailcut: 30/30 tasks")
    assert err.getvalue().endswith("\n")
    with cluster_client(ex) as c:
        err.truncate(0)
        assert c.gather(c.map(square, range(12)), progress=True) == [i * i for i in range(12)]
        assert "tailcut: 12/12 tasks" in err.getvalue()


def test_progress_uses_tqdm_when_installed(ex, monkeypatch):
    tqdm = pytest.importorskip("tqdm")
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    assert list(ex.map(square, range(20), progress=True)) == [i * i for i in range(20)]
    assert "20/20" in err.getvalue() and tqdm.__name__ == "tqdm"


def cluster_client(ex):
    return ex.cluster.client()


# ------------------------------------------------------------ the worker --
def _import_slow_package(path):
    sys.path.insert(0, path)
    import slow_tc_pkg  # noqa: F401 (its __init__ imports .part, then sleeps)


def _half_imported():
    return os.getpid(), "slow_tc_pkg.part" in sys.modules


def test_a_worker_cancelled_while_importing_is_replaced(tmp_path):
    """A cancel that cuts an import short leaves submodules in sys.modules
    (what broke numpy in a grid search): that worker exits, a fresh one
    runs the next task."""
    pkg = tmp_path / "slow_tc_pkg"
    pkg.mkdir()
    (pkg / "part.py").write_text("X = 1\n")
    (pkg / "__init__.py").write_text("from . import part\nimport time\ntime.sleep(60)\n")
    with tailcut.LocalCluster(executors=1, slots=1, allow_python=True) as one, one.client() as c:
        first_pid = c.submit(_half_imported).result(timeout=60)[0]
        f = c.submit(_import_slow_package, str(tmp_path))
        c.flush()
        deadline = time.monotonic() + 30
        while c.status(f.job_id).running < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # into the sleep of the package's __init__
        assert f.cancel()
        pid, half = c.submit(_half_imported).result(timeout=60)
        assert not half and pid != first_pid
