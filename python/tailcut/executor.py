"""`tailcut.Executor`: the `concurrent.futures.Executor` door to tailcut
(docs/PYTHON.md, "concurrent.futures"). Its futures are
`concurrent.futures.Future`s (awaitable too), a task's exception is
re-raised with the remote traceback as its `__cause__`, and with no
scheduler it starts a local cluster, as Dask's `LocalCluster`.

    with tailcut.Executor() as ex:
        print(list(ex.map(score, range(100))))

One thread per Executor owns its Client (a Client is not thread-safe):
`submit` pickles in the caller's thread (so a function that does not
pickle is refused there), queues the task and wakes that thread, which
sends everything queued as one job, resolves results as they are pushed
and hands them to the futures.
"""

import asyncio
import concurrent.futures as cf
import itertools
import os
import threading
import time
from collections import deque

from . import _progress
from ._futures import check_timeout
from .client import Client
from .errors import TailcutError

_global_shutdown = False  # the interpreter is exiting: no new submits
_live = set()  # executors whose thread runs: joined at interpreter exit


class Future(cf.Future):
    """A `concurrent.futures.Future` that is also awaitable (`await fut`,
    `asyncio.gather(*futs)`) and refuses a NaN timeout."""

    def result(self, timeout=None):
        return super().result(check_timeout(timeout))

    def exception(self, timeout=None):
        return super().exception(check_timeout(timeout))

    get = result  # joblib's AsyncResult API (tailcut.joblib_backend)

    def __await__(self):
        return asyncio.wrap_future(self).__await__()


def _positive_int(value, what):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, got {value!r}")
    if value <= 0:
        raise ValueError(f"{what} must be greater than 0")
    return value


class Executor(cf.Executor):
    """Runs Python functions as tailcut tasks.

    max_workers  tasks sent and not finished at any time, as a pool's
                 workers (None: no limit, everything submitted goes to the
                 scheduler, which queues it); with no scheduler, also the
                 local cluster's size (default os.cpu_count())
    scheduler    the client endpoint; None: $TAILCUT_SCHEDULER, else a
                 LocalCluster of single-slot executors started here
    cluster      a running tailcut.LocalCluster to use instead
    idempotent   the tasks may run twice (copies of slow attempts); None:
                 not unless the function says so (@tailcut.idempotent)
    **client_options  for tailcut.Client (key_file, scheduler_key, timeout, user)
    """

    def __init__(self, max_workers=None, scheduler=None, *, cluster=None, idempotent=None, **client_options):
        if max_workers is not None:
            _positive_int(max_workers, "max_workers")
        if idempotent is not None and not isinstance(idempotent, bool):
            raise TypeError(f"idempotent must be True, False or None, got {idempotent!r}")
        self._owned_cluster = None
        if scheduler is None and cluster is None and not os.environ.get("TAILCUT_SCHEDULER"):
            from .local import LocalCluster

            cluster = LocalCluster(executors=max_workers or os.cpu_count() or 1, slots=1, allow_python=True)
            cluster.start()
            self._owned_cluster = cluster
        if cluster is not None:
            client_options = {**cluster.client_options(), **client_options}
        else:
            client_options = {"scheduler": scheduler, **client_options}
        self._client_options = client_options
        try:
            self._client = Client(**client_options)
        except BaseException:
            if self._owned_cluster is not None:
                self._owned_cluster.stop()
            raise
        self.cluster = cluster
        self._functions = self._client.functions
        self._cap = max_workers
        self._max_workers = max_workers
        self._options = {"idempotent": idempotent}
        self._lock = threading.Lock()
        self._queue = deque()  # _Entry of submits not sent yet
        self._shutdown = False
        self._in_flight = 0  # tasks sent and not finished (the thread's; read by shutdown)
        self._woken = False  # a wake byte is on its way: the thread takes the queue before it waits
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._client.set_wake(self._wake_r)
        self._thread = threading.Thread(target=self._run, name=f"tailcut.Executor-{id(self):x}", daemon=True)
        _live.add(self)
        self._thread.start()

    # -------------------------------------------------------------- API --
    def submit(self, fn, /, *args, **kwargs):
        return self.submit_task(fn, args, kwargs)

    submit.__doc__ = cf.Executor.submit.__doc__

    def slots(self):
        """Slots of the executors that run Python (what joblib's n_jobs=-1
        means), asked on a connection of its own (the thread owns the other)."""
        with Client(**self._client_options) as c:
            return sum(e.cpu_slots for e in c.executors() if "python" in e.labels)

    @property
    def closed(self):
        """shutdown() was called: no more submits."""
        return self._shutdown

    def submit_task(self, fn, args=(), kwargs=None, options=None, outer=None):
        """submit() with task options ({"idempotent", "task_class"}; None:
        this executor's) and the future it settles: `outer`, an asyncio
        future (AsyncClient), is resolved on its loop; None: a new Future.
        Returns that future."""
        options = self._options if options is None else options
        kwargs = {} if kwargs is None else kwargs
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            if _global_shutdown:
                raise RuntimeError("cannot schedule new futures after interpreter shutdown")
            entry = self._functions.make(fn, args, kwargs, options, check_version=False)
            outer = entry.future.outer = Future() if outer is None else outer
            self._queue.append(entry)
            wake, self._woken = not self._woken, True
        if wake:  # one byte per turn of the thread, not per submit
            self._wake()
        return outer

    def map(self, fn, *iterables, timeout=None, chunksize=1, progress=None):
        """As Executor.map: the results in order, lazily; TimeoutError when
        one is not there `timeout` seconds after the call. `chunksize`
        items go to one task (fewer, longer tasks); `progress`: a progress
        bar (None: only when interactive, docs/PYTHON.md "Progress")."""
        timeout = check_timeout(timeout)
        if isinstance(chunksize, bool) or not isinstance(chunksize, int) or chunksize < 1:
            raise ValueError(f"chunksize must be >= 1, got {chunksize!r}")
        end = None if timeout is None else time.monotonic() + timeout
        if chunksize == 1:
            fs = [self.submit(fn, *items) for items in zip(*iterables)]
        else:
            fs = [self.submit(_run_chunk, fn, chunk) for chunk in _chunks(iterables, chunksize)]
        bar = _progress.for_futures(fs, progress, "tasks")

        def results():
            try:
                fs.reverse()  # popped from the end: no reference kept to a result handed out
                # No local holds a result while suspended at a yield (a
                # result the caller dropped is freed).
                while fs:
                    if chunksize == 1:
                        yield _take(fs.pop(), end)
                    else:
                        chunk = _take(fs.pop(), end)
                        chunk.reverse()
                        while chunk:
                            yield chunk.pop()
            finally:
                for f in fs:
                    f.cancel()
                if bar is not None:
                    bar.close()

        return results()

    def shutdown(self, wait=True, *, cancel_futures=False):
        """No more submits; with cancel_futures, the tasks not sent yet are
        cancelled; with wait, returns once every sent task finished and the
        connection (and a local cluster started here) is closed."""
        with self._lock:
            self._shutdown = True
            dropped = []
            if cancel_futures:
                # Those a free worker takes at the thread's next turn count as
                # started, as in a pool whose idle threads took them already.
                room = len(self._queue) if self._cap is None else max(0, self._cap - self._in_flight)
                while len(self._queue) > room:
                    dropped.append(self._queue.pop())
        for e in dropped:
            _cancel(e.future.outer)
        self._wake()
        if wait and self._thread is not threading.current_thread():
            self._thread.join()

    # ---------------------------------------------------------- the thread --
    def _wake(self):
        try:
            os.write(self._wake_w, b"x")
        except (BlockingIOError, OSError):
            pass  # full: it is awake anyway; closed: the thread ended

    def _run(self):
        functions = self._functions
        finished = deque()
        functions.watch_done(finished)
        try:
            while True:
                with self._lock:
                    self._woken = False
                    room = len(self._queue) if self._cap is None else max(0, self._cap - self._in_flight)
                    batch = [self._queue.popleft() for _ in range(min(room, len(self._queue)))]
                    stopping = self._shutdown and not self._queue
                batch = [e for e in batch if _start(e.future.outer)]
                if batch:
                    self._in_flight += len(batch)
                    functions.send_now(batch)
                self._in_flight -= self._deliver(finished)
                if stopping and self._in_flight == 0 and not batch:
                    return
                try:
                    functions.pump()
                except Exception as err:  # noqa: BLE001 (the scheduler gone for good, a lost job): to the futures
                    functions.fail_open(err)
                self._in_flight -= self._deliver(finished)
        finally:
            functions.unwatch_done(finished)
            self._close()

    @staticmethod
    def _deliver(finished):
        """Hands finished tasks to their futures; returns how many. Those of
        an asyncio loop go to it in one call per turn (one wake-up of the
        loop, not one per result)."""
        n = 0
        on_loops = {}
        while finished:
            f = finished.popleft()
            outer, f.outer = f.outer, None
            if outer is None:
                continue
            n += 1
            cancelled, error, value = f.hand_over()  # the caller's future holds them now (and drops them)
            if isinstance(outer, asyncio.Future):
                on_loops.setdefault(outer.get_loop(), []).append((outer, cancelled, error, value))
            elif cancelled:
                outer.cancel()
            elif error is not None:
                outer.set_exception(error)
            else:
                outer.set_result(value)
            del outer, error, value
        for loop, settled in on_loops.items():
            try:
                loop.call_soon_threadsafe(_settle, settled)
            except RuntimeError:  # the loop is closed: nobody waits on them
                pass
        return n

    def _close(self):
        _live.discard(self)
        try:
            self._client.close()
        finally:
            if self._owned_cluster is not None:
                self._owned_cluster.stop()
            os.close(self._wake_r)
            os.close(self._wake_w)

    def __repr__(self):
        return f"<tailcut.Executor {self._client.endpoint} max_workers={self._max_workers}>"


def _start(outer):
    """A task is sent only if its future was not cancelled meanwhile."""
    if isinstance(outer, asyncio.Future):
        return not outer.cancelled()  # read from this thread: at worst a cancelled task runs, unread
    return outer.set_running_or_notify_cancel()


def _cancel(outer):
    if isinstance(outer, asyncio.Future):
        try:
            outer.get_loop().call_soon_threadsafe(outer.cancel)
        except RuntimeError:
            pass
    else:
        outer.cancel()


def _settle(settled):
    """On the loop: results of one turn of the executor's thread."""
    for fut, cancelled, error, value in settled:
        if fut.done():
            continue
        if cancelled:
            fut.cancel()
        elif error is not None:
            fut.set_exception(error)
        else:
            fut.set_result(value)


def _take(future, end):
    try:
        return future.result(None if end is None else end - time.monotonic())
    finally:
        del future


def _chunks(iterables, size):
    it = zip(*iterables)
    while chunk := tuple(itertools.islice(it, size)):
        yield chunk


def _run_chunk(fn, chunk):
    """On the worker: one task of `chunksize` items (Executor.map)."""
    return [fn(*items) for items in chunk]


def _python_exit():
    # As concurrent.futures.thread: at interpreter exit, no new submits, and
    # every executor finishes what it holds.
    global _global_shutdown
    _global_shutdown = True
    for ex in list(_live):
        ex.shutdown(wait=True)


threading._register_atexit(_python_exit)
