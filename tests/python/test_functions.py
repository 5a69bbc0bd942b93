"""Python functions as tasks (docs/PYTHON.md, "Python functions") against
real daemons: executors started with --allow-python running warm workers.
Behaviour, with the time bounds the docs promise (cancel within a second)."""

import os
import sys
import time

import cloudpickle
import pytest

import tailcut
from tailcut import functions

try:
    import numpy
except ImportError:
    numpy = None

# The workers cannot import this test module: its functions travel by value
# (the way for any module that is not installed on the executors).
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def cluster(python_cluster):
    return python_cluster


@pytest.fixture
def client(cluster):
    with cluster.client() as c:
        yield c


@pytest.fixture(scope="module")
def one_slot():
    """One executor with one slot: the next task waits for the slot a
    cancelled or crashed task held."""
    with tailcut.LocalCluster(executors=1, slots=1, allow_python=True) as c:
        yield c


def square(x, plus=0):
    return x * x + plus


def pid():
    return os.getpid()


def test_submit_map_gather_in_order(client):
    f = client.submit(square, 7, plus=1)
    assert f.result(timeout=30) == 50
    futures = client.map(square, range(200))
    assert client.gather(futures) == [x * x for x in range(200)]
    assert len({x.job_id for x in futures}) == 1  # one job, one message
    assert all(x.done() and not x.copy for x in futures)


def test_many_submits_are_batched_into_one_job(client):
    futures = [client.submit(square, i) for i in range(50)]
    assert all(f.job_id is None for f in futures)  # held until waited on
    assert tailcut.gather(futures) == [i * i for i in range(50)]
    assert len({f.job_id for f in futures}) == 1


def test_as_completed_yields_each_once(client):
    futures = client.map(square, range(30))
    seen = [f.result() for f in client.as_completed(futures)]
    assert sorted(seen) == sorted(x * x for x in range(30))


def test_module_function_reference(client):
    assert client.submit("operator:add", 2, 3).result(timeout=30) == 5
    assert client.gather(client.map("math:factorial", [3, 4])) == [6, 24]


def raises_with_output(n):
    print("about to fail", n)
    raise ValueError(f"bad value {n}")


def test_exception_comes_back_with_remote_traceback(client):
    f = client.submit(raises_with_output, 7)
    with pytest.raises(ValueError, match="bad value 7") as info:
        f.result(timeout=30)
    cause = info.value.__cause__
    assert isinstance(cause, tailcut.RemoteTraceback)
    # The printed traceback names the documented class, not a private module.
    import traceback
    printed = "".join(traceback.format_exception(info.value))
    assert "tailcut.RemoteTraceback:" in printed and "tailcut._" not in printed
    assert "raises_with_output" in cause.text and "ValueError: bad value 7" in cause.text
    assert f.stdout == "about to fail 7\n"
    # One failing task is that task's result: the rest of a map go on.
    futures = client.map(lambda x: 1 // x, [1, 0, 2])
    assert futures[0].result() == 1 and futures[2].result() == 0
    assert isinstance(futures[1].exception(), ZeroDivisionError)


def test_exception_that_does_not_unpickle_is_a_task_error(client):
    def fail():
        class Local(Exception):  # a class defined inside the task cannot be pickled by reference
            pass

        raise Local("only over there")

    with pytest.raises(tailcut.TaskError, match="only over there") as info:
        client.submit(fail).result(timeout=30)
    assert "Local" in info.value.type_name and "fail" in info.value.remote_traceback


def test_progress_is_accepted(client):
    def half():
        tailcut.progress(0.4)
        tailcut.progress(float("nan"))
        return "ok"

    assert client.submit(half).result(timeout=30) == "ok"
    assert half() == "ok"  # a no-op outside a worker


def test_too_large_arguments_are_refused_before_sending(client):
    with pytest.raises(tailcut.TooLarge, match="over the limit"):
        client.submit(len, b"x" * (functions.MAX_ARGS_BYTES + 1))


@pytest.mark.skipif(numpy is None, reason="numpy is optional")
def test_numpy_arrays_round_trip_writable(client):
    a = numpy.arange(100000, dtype=numpy.float64)
    out = client.submit(numpy.multiply, a, 2.0).result(timeout=30)
    assert out.dtype == numpy.float64 and (out == a * 2).all()
    out[0] = 1.0  # results are writable arrays


def test_version_mismatch_refused_unless_by_reference(client, monkeypatch):
    running = {e.labels.get("python") for e in client.executors()}
    assert running == {functions.PYTHON_VERSION}  # advertised in Register, shown as the label
    monkeypatch.setattr(functions, "PYTHON_VERSION", "2.7")
    client._functions.versions = None
    with pytest.raises(tailcut.PythonVersionMismatch, match=r"Python 2\.7.*executors run Python 3\.") as info:
        client.submit(square, 3)
    assert "module:function" in str(info.value)
    assert client.submit("operator:mul", 6, 7).result(timeout=30) == 42  # any version


def test_without_allow_python_refused_with_the_reason():
    with tailcut.LocalCluster(executors=1, slots=1) as cluster, cluster.client() as c:
        assert all("python" not in e.labels for e in c.executors())
        with pytest.raises(tailcut.UnknownKernel, match="--allow-python"):
            c.map(square, [1])
        f = c.submit(square, 2)
        with pytest.raises(tailcut.UnknownKernel, match="--allow-python"):
            f.result(timeout=30)


def sleep_forever():
    time.sleep(10**6)


def sleep_through_sigint():
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            time.sleep(60)
        except KeyboardInterrupt:
            pass  # ignores the interrupt: the executor must kill it


def _cancel_while_running(c, fn):
    """Runs fn on the one slot, cancels it once it runs; then the next task
    on that slot. (future, worker pid before, pid after, seconds from the
    cancel to the next task's result)."""
    before = c.submit(pid).result(timeout=30)
    f = c.submit(fn)
    c.flush()
    deadline = time.monotonic() + 30
    while c.status(f.job_id).running == 0:
        assert time.monotonic() < deadline, "the task never started"
        time.sleep(0.02)
    time.sleep(0.3)  # inside the function by now
    t0 = time.monotonic()
    assert f.cancel()
    after = c.submit(pid).result(timeout=30)  # needs the same slot
    return f, before, after, time.monotonic() - t0


def test_cancel_interrupts_a_sleeping_task_within_a_second(one_slot):
    with one_slot.client() as c:
        f, before, after, elapsed = _cancel_while_running(c, sleep_forever)
        assert elapsed < 1.0
        assert after == before  # SIGINT stopped it: the warm worker goes on
        assert f.cancelled() and c.status(f.job_id).state == "cancelled"
        with pytest.raises(tailcut.CancelledError):
            f.result()


def test_cancel_kills_and_replaces_a_worker_that_ignores_sigint(one_slot):
    with one_slot.client() as c:
        f, before, after, elapsed = _cancel_while_running(c, sleep_through_sigint)
        assert after != before  # killed after the 1 s grace, a fresh worker in its place
        assert 0.9 < elapsed < 5.0


def test_worker_that_exits_fails_the_attempt_and_the_pool_recovers(one_slot):
    with one_slot.client() as c:
        before = c.submit(pid).result(timeout=30)
        crash = tailcut.task(lambda: os._exit(1), max_attempts=1)
        f = c.submit(crash)
        with pytest.raises(tailcut.JobFailed, match=r"python worker \(pid \d+\) exited with code 1") as info:
            f.result(timeout=30)
        assert info.value.status.failed_attempts == 1
        after = c.submit(pid).result(timeout=30)
        assert after != before  # a fresh worker
        assert c.gather(c.map(square, range(10))) == [x * x for x in range(10)]
        assert len(c.executors()) == 1  # the executor kept serving


def hold_bytes(mb):
    data = b"x" * (mb << 20)
    time.sleep(10)
    return len(data)


def test_a_task_over_its_memory_request_fails_and_the_pool_recovers(one_slot):
    with one_slot.client() as c:
        big = tailcut.task(hold_bytes, memory_mb=200, max_attempts=1)
        start = time.monotonic()
        with pytest.raises(tailcut.JobFailed, match=r"python: exceeded its memory request of 200 MB") as info:
            c.submit(big, 400).result(timeout=30)
        assert time.monotonic() - start < 9  # stopped, not left to finish its sleep
        assert info.value.status.failed_attempts == 1
        small = tailcut.task(square, memory_mb=200)
        assert c.submit(small, 9).result(timeout=30) == 81  # a fresh worker within its request


def test_workers_are_recycled_after_python_max_tasks():
    with tailcut.LocalCluster(executors=1, slots=1, allow_python=True,
                              executor_flags=["--set", "python_max_tasks=2"]) as cluster, cluster.client() as c:
        pids = [c.submit(pid).result(timeout=30) for _ in range(5)]
        assert pids[0] == pids[1] != pids[2] == pids[3] != pids[4]


def slow_square(x):
    time.sleep(0.2)
    return x * x


def test_scheduler_restart_while_python_tasks_run():
    with tailcut.LocalCluster(executors=2, slots=2, allow_python=True, journal=True) as cluster:
        with cluster.client() as c:
            futures = c.map(slow_square, range(40))
            first = next(iter(c.as_completed(futures)))
            assert first.result() in [x * x for x in range(40)]
            cluster.restart_scheduler(kill=True)  # a crash: the journal keeps the job
            assert c.gather(futures, timeout=120) == [x * x for x in range(40)]


def total(*parts):
    return sum(parts)


def test_futures_as_arguments_run_after_their_tasks_and_pass_their_values(client):
    # docs/PYTHON.md, "Futures as arguments": a map, then a reduce over its futures.
    squares = client.map(square, range(10))
    reduced = client.submit(total, *squares)
    assert reduced.result(timeout=60) == sum(x * x for x in range(10))
    st = client.status(reduced.job_id)
    assert list(st.after) == [squares[0].job_id]
    # A keyword argument, and a chain: each step waits for the one before.
    step = client.submit(square, 2)
    for _ in range(3):
        step = client.submit(square, step, plus=1)
    expected = 2 * 2
    for _ in range(3):
        expected = expected * expected + 1
    assert step.result(timeout=60) == expected
    assert client.submit(square, 3, plus=client.submit(square, 2)).result(timeout=60) == 13


def fails():
    raise ValueError("no data")


def test_a_failed_upstream_future_fails_its_dependents(client):
    bad = client.submit(fails)
    dependent = client.submit(square, bad)
    # The upstream task ran to its end (its exception is its result), so the
    # dependent runs and gets the exception named in place of the value.
    with pytest.raises(RuntimeError) as e:
        dependent.result(timeout=60)
    assert "input 0: the upstream task raised builtins.ValueError: no data" in str(e.value)
