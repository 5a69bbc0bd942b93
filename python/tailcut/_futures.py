"""The client's side of one Python task's result: `tailcut.Future`, the
exception re-raised from a task (with its remote traceback), and
`as_completed` / `gather` over futures of one Client. The Client resolves
them (functions.py) while the caller waits on one."""

import math
import time
from collections import deque

from . import _pickling
from .errors import InvalidArgument, TailcutError


def check_timeout(timeout, what="timeout"):
    """`timeout` as seconds (float) or None (no limit). NaN, a bool or a
    non-number is refused (a NaN deadline would never pass, or always);
    a negative one counts as 0, as in concurrent.futures."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or math.isnan(timeout):
        raise InvalidArgument(f"{what} must be None or a number of seconds, got {timeout!r}")
    return max(0.0, float(timeout))


class TaskError(TailcutError):
    """A task's exception that did not unpickle here: `type_name`,
    `remote_traceback` (text), `stdout`, `stderr`."""

    def __init__(self, type_name, message, remote_traceback, stdout="", stderr=""):
        super().__init__(f"{type_name}: {message}\n\nRemote traceback:\n{remote_traceback}")
        self.type_name, self.remote_traceback, self.stdout, self.stderr = type_name, remote_traceback, stdout, stderr


class RemoteTraceback(Exception):
    """The `__cause__` of an exception re-raised from a task: its traceback
    on the executor, as text."""

    def __init__(self, text):
        super().__init__(text)
        self.text = text

    def __str__(self):
        return "\n\nRemote traceback (on the executor):\n" + self.text



_PENDING, _SENT, _DONE, _CANCELLED = "pending", "sent", "done", "cancelled"


class Future:
    """The result of one Python task. `result()` waits for it and returns
    the function's value or raises its exception (with the remote
    traceback as `__cause__`); `stdout` and `stderr` hold the last 4 KiB
    the function printed; `executor_id`, `attempt_id`, `run_s` say which
    attempt won, `copy` whether it was a redundant copy (it beat the
    task's earlier attempt)."""

    __slots__ = ("_client", "_state", "_value", "_error", "job_id", "task_index", "stdout", "stderr",
                 "executor_id", "attempt_id", "run_s", "copy", "outer")

    def __init__(self, client):
        self._client = client
        self.outer = None  # the concurrent.futures.Future it feeds (tailcut.Executor)
        self._state = _PENDING
        self._value = self._error = None
        self.job_id = self.task_index = None
        self.stdout = self.stderr = ""
        self.executor_id = self.attempt_id = 0
        self.run_s = 0.0
        self.copy = False

    def done(self):
        return self._state in (_DONE, _CANCELLED)

    def cancelled(self):
        return self._state == _CANCELLED

    def result(self, timeout=None):
        self._client._functions.wait([self], timeout)
        if self._state == _CANCELLED:
            raise CancelledError(f"task {self.task_index} of job {self.job_id} was cancelled")
        if self._error is not None:
            raise self._error
        return self._value

    def exception(self, timeout=None):
        self._client._functions.wait([self], timeout)
        return self._error

    def cancel(self):
        """Cancels the task: one not sent yet is dropped; a sent one is
        stopped when it is the last unfinished task of its job (the job is
        cancelled: its running attempt gets SIGINT), else its result is
        ignored. False when it had already finished."""
        return self._client._functions.cancel(self)

    def __repr__(self):
        return f"<tailcut.Future {self._state} job={self.job_id} task={self.task_index}>"


class CancelledError(TailcutError):
    """result() of a cancelled Future."""



def _writable(data):
    # A value's out-of-band buffers (numpy arrays) are views of the output:
    # a bytearray makes them writable, at one copy, only when there are any.
    return bytearray(data) if _has_buffers(data) else data


def _has_buffers(data):
    try:
        view = memoryview(data)
        (n,) = _pickling._U32.unpack_from(view, 6)
        offset = 10 + n
        (m,) = _pickling._U32.unpack_from(view, offset)
        return _pickling._U32.unpack_from(view, offset + 4 + m)[0] > 0
    except Exception:
        return False


def _exception_of(value, stdout, stderr):
    tb = value.get("traceback", "")
    exc = None
    if value.get("exception") is not None:
        try:
            exc = _pickling.loads_value(value["exception"])
        except Exception:
            exc = None
    if isinstance(exc, BaseException):
        exc.__cause__ = RemoteTraceback(tb)
        try:
            exc.remote_traceback, exc.stdout, exc.stderr = tb, stdout, stderr
        except AttributeError:
            pass
        return exc
    return TaskError(value.get("type", "Exception"), value.get("message", ""), tb, stdout, stderr)


def as_completed(futures, timeout=None):
    """Yields the futures as they finish (each once), from one Client;
    Timeout when some are not done after `timeout` seconds."""
    return _as_completed(list(futures), check_timeout(timeout))  # checked now, not at the first next()


def _as_completed(futures, timeout):
    if not futures:
        return
    functions = futures[0]._client._functions
    if any(f._state == _PENDING for f in futures):
        functions.flush()
    deadline = None if timeout is None else time.monotonic() + timeout
    wanted = {id(f) for f in futures}
    done = deque()
    functions.watchers.append(done)
    try:
        left = len(wanted)
        for f in futures:
            if f.done() and id(f) in wanted:
                wanted.discard(id(f))
                left -= 1
                yield f
        while left:
            while not done:
                functions.pump(deadline, futures)
            f = done.popleft()
            if id(f) in wanted:
                wanted.discard(id(f))
                left -= 1
                yield f
    finally:
        functions.watchers.remove(done)


def gather(futures, timeout=None, progress=None):
    """The futures' results in order; raises the first task's exception.
    `progress`: a progress bar (None: only when interactive, _progress.py)."""
    from . import _progress

    futures = list(futures)
    if futures and _progress.wanted(progress):
        bar = _progress.Bar(len(futures))
        try:
            for _ in as_completed(futures, timeout):
                bar.update(1)
        finally:
            bar.close()
    elif futures:
        futures[0]._client._functions.wait(futures, timeout)
    return [f.result() for f in futures]
