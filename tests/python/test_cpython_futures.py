"""CPython's own executor tests (test.test_concurrent_futures, Debian's
libpython3.11-testsuite) against tailcut.Executor (docs/PYTHON.md,
"concurrent.futures": which tests run, and each adapted one and why).

The generic suites run unchanged: ExecutorTest, WaitTests,
AsCompletedTests and ExecutorShutdownTest, plus ProcessPoolExecutorTest's
test_map_chunksize; each test gets a fresh Executor(max_workers=5), as in
CPython, on one local cluster shared by the module (an executor of 6
single-threaded slots: a cluster per test would cost ~0.5 s each).
Adapted (overridden below) are only the tests that read in-process state.
"""

import sys
import time
import unittest

import pytest

T = pytest.importorskip("test.test_concurrent_futures", reason="needs CPython's test suite "
                        "(Debian: libpython3.11-testsuite)")
cloudpickle = pytest.importorskip("cloudpickle")

from test.support.script_helper import assert_python_ok  # noqa: E402

import tailcut  # noqa: E402

# This module is not importable on the workers (tests/python is not on
# their path): its functions and classes travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

_cluster = None


def setUpModule():
    global _cluster
    _cluster = tailcut.LocalCluster(executors=1, slots=6, allow_python=True)
    _cluster.start()


def tearDownModule():
    _cluster.stop()


def _test_traceback():
    raise RuntimeError(123) # some comment  # noqa: E261,E262 (the line CPython's test looks for)


class TailcutMixin(T.ExecutorMixin):
    worker_count = 5

    def executor_type(self, max_workers=None, **options):
        return tailcut.Executor(max_workers, cluster=_cluster, **options)


class TailcutExecutorTest(TailcutMixin, T.ExecutorTest, T.BaseTestCase):
    test_map_chunksize = T.ProcessPoolExecutorTest.test_map_chunksize

    def test_traceback(self):
        # Adapted from ProcessPoolExecutorTest.test_traceback: the remote
        # traceback is tailcut.RemoteTraceback (its text in .text), not
        # concurrent.futures.process._RemoteTraceback (.tb); and the function
        # is a module-level one (CPython's is a classmethod of the test case,
        # whose class holds pytest's locks and does not pickle by value).
        future = self.executor.submit(_test_traceback)
        with self.assertRaises(Exception) as cm:
            future.result()
        exc = cm.exception
        self.assertIs(type(exc), RuntimeError)
        self.assertEqual(exc.args, (123,))
        self.assertIs(type(exc.__cause__), tailcut.RemoteTraceback)
        self.assertIn("raise RuntimeError(123) # some comment", exc.__cause__.text)
        with T.support.captured_stderr() as f1:
            try:
                raise exc
            except RuntimeError:
                sys.excepthook(*sys.exc_info())
        self.assertIn("raise RuntimeError(123) # some comment", f1.getvalue())


class TailcutWaitTest(TailcutMixin, T.WaitTests, T.BaseTestCase):
    pass


class TailcutAsCompletedTest(TailcutMixin, T.AsCompletedTests, T.BaseTestCase):
    pass


# The interpreter-exit tests start a fresh Python that makes its own
# executor: CPython's import `concurrent.futures.<executor_type.__name__>`
# and print from the task, which in tailcut runs on an executor's worker
# (its stdout is kept with the result, not printed here). Adapted: they
# import tailcut.Executor (on this module's cluster) and print from a done
# callback, which runs in the exiting interpreter only if the exit waited
# for the task.
_EXIT_PROLOGUE = """if 1:
    import time
    import tailcut
    def apple(f):
        if f.exception() is None:
            print("apple", flush=True)
"""


class TailcutShutdownTest(TailcutMixin, T.ExecutorShutdownTest, T.BaseTestCase):
    def _python(self, script):
        # An env var for the child also turns off -I, so it sees PYTHONPATH.
        return assert_python_ok("-c", _EXIT_PROLOGUE + script, TAILCUT_SCHEDULER=_cluster.client_endpoint)

    def test_interpreter_shutdown(self):
        rc, out, err = self._python("""
    t = tailcut.Executor(5)
    t.submit(time.sleep, 1.0).add_done_callback(apple)
""")
        self.assertFalse(err)
        self.assertEqual(out.strip(), b"apple")

    def test_submit_after_interpreter_shutdown(self):
        rc, out, err = self._python("""
    import atexit
    @atexit.register
    def run_last():
        try:
            t.submit(id, None)
        except RuntimeError:
            print("runtime-error")
            raise
    t = tailcut.Executor(5)
""")
        self.assertIn("RuntimeError: cannot schedule new futures", err.decode())
        self.assertEqual(out.strip(), b"runtime-error")

    def test_hang_gh83386(self):
        rc, out, err = self._python("""
    t = tailcut.Executor(max_workers=3)
    t.submit(time.sleep, 1.0).add_done_callback(apple)
    t.shutdown(wait=False)
""")
        self.assertFalse(err)
        self.assertEqual(out.strip(), b"apple")

    # In place of ProcessPoolShutdownTest's tests, which count the pool's
    # processes (executor._processes): the executor's own thread ends.
    def test_context_manager_shutdown(self):
        with self.executor_type(max_workers=5) as e:
            self.assertEqual(list(e.map(abs, range(-5, 5))), [5, 4, 3, 2, 1, 0, 1, 2, 3, 4])
        self.assertFalse(e._thread.is_alive())
        self.assertRaises(RuntimeError, e.submit, pow, 2, 5)

    def test_shutdown_no_wait(self):
        e = self.executor_type(max_workers=5)
        fs = [e.submit(time.sleep, 1.0) for _ in range(5)]
        e.shutdown(wait=False)
        self.assertFalse(all(f.done() for f in fs), "shutdown(wait=False) waited for the tasks")
        for f in fs:
            self.assertIsNone(f.result(timeout=30))
        e._thread.join(30)
        self.assertFalse(e._thread.is_alive())


if __name__ == "__main__":
    unittest.main()
