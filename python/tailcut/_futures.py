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



# A Future's states (Future.state): made, sent in a job, finished, cancelled.
PENDING, SENT, DONE, CANCELLED = "pending", "sent", "done", "cancelled"


class Future:
    """The result of one Python task. `result()` waits for it and returns
    the function's value or raises its exception (with the remote
    traceback as `__cause__`); `stdout` and `stderr` hold the last 4 KiB
    the function printed; `executor_id`, `attempt_id`, `run_s` say which
    attempt won, `copy` whether it was a redundant copy (it beat the
    task's earlier attempt).

    The owner (the Client's functions.FunctionTasks) settles it with
    mark_sent / set_result / set_exception / mark_cancelled, as an executor
    settles a concurrent.futures.Future with set_result and set_exception."""

    __slots__ = ("_owner", "_state", "_value", "_error", "job_id", "task_index", "stdout", "stderr",
                 "executor_id", "attempt_id", "run_s", "copy", "outer")

    def __init__(self, owner):
        self._owner = owner
        self.outer = None  # the concurrent.futures.Future it feeds (tailcut.Executor)
        self._state = PENDING
        self._value = self._error = None
        self.job_id = self.task_index = None
        self.stdout = self.stderr = ""
        self.executor_id = self.attempt_id = 0
        self.run_s = 0.0
        self.copy = False

    @property
    def owner(self):
        """The Client's functions.FunctionTasks that sends and resolves it."""
        return self._owner

    @property
    def state(self):
        """PENDING, SENT, DONE or CANCELLED."""
        return self._state

    def done(self):
        return self._state in (DONE, CANCELLED)

    def cancelled(self):
        return self._state == CANCELLED

    def result(self, timeout=None):
        self._owner.wait([self], timeout)
        if self._state == CANCELLED:
            raise CancelledError(f"task {self.task_index} of job {self.job_id} was cancelled")
        if self._error is not None:
            raise self._error
        return self._value

    def exception(self, timeout=None):
        self._owner.wait([self], timeout)
        return self._error

    def cancel(self):
        """Cancels the task: one not sent yet is dropped; a sent one is
        stopped when it is the last unfinished task of its job (the job is
        cancelled: its running attempt gets SIGINT), else its result is
        ignored. False when it had already finished."""
        return self._owner.cancel(self)

    # ------------------------------------------------- for its owner --
    def mark_sent(self, job_id, task_index):
        self.job_id, self.task_index, self._state = job_id, task_index, SENT

    def set_result(self, value):
        self._value, self._state = value, DONE

    def set_exception(self, error):
        self._error, self._state = error, DONE

    def mark_cancelled(self):
        self._state = CANCELLED

    def hand_over(self):
        """(cancelled, exception, value), dropping its own references to
        them: the caller's future holds them now (tailcut.Executor)."""
        out = (self._state == CANCELLED, self._error, self._value)
        self._error = self._value = None
        return out

    def __repr__(self):
        return f"<tailcut.Future {self._state} job={self.job_id} task={self.task_index}>"


class CancelledError(TailcutError):
    """result() of a cancelled Future."""


def remote_exception(value, stdout, stderr):
    """The exception a task raised, from its error value (worker.py): the
    original, unpickled, with the remote traceback as its __cause__, or a
    TaskError when it does not unpickle here."""
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
    functions = futures[0].owner
    if any(f.state == PENDING for f in futures):
        functions.flush()
    deadline = None if timeout is None else time.monotonic() + timeout
    wanted = {id(f) for f in futures}
    done = deque()
    functions.watch_done(done)
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
        functions.unwatch_done(done)


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
        futures[0].owner.wait(futures, timeout)
    return [f.result() for f in futures]
