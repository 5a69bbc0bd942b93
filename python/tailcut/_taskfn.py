"""Task options for Python functions (docs/PYTHON.md, "Python
functions"): `tailcut.task(fn, idempotent=..., ...)`, the decorators
`@tailcut.task(...)` and `@tailcut.idempotent`."""

from .errors import InvalidArgument
from .jobs import MAX_MEMORY_MB


class TaskFunction:
    """A function with task options; from `tailcut.task(...)` or the
    `@tailcut.idempotent` decorator. Calling it calls the function here."""

    def __init__(self, fn, idempotent=None, max_attempts=0, timeout_s=0.0, cpu_slots=1, memory_mb=0):
        if isinstance(fn, TaskFunction):
            fn = fn.fn
        if not (callable(fn) or isinstance(fn, str)):
            raise InvalidArgument(f"a task is a function or a 'module:function' string, got {type(fn).__name__}")
        if idempotent is not None and not isinstance(idempotent, bool):
            raise InvalidArgument(f"idempotent must be True, False or None, got {idempotent!r}")
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 0:
            raise InvalidArgument(f"max_attempts must be an int >= 0 (0: the scheduler's default), got {max_attempts!r}")
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not timeout_s >= 0:
            raise InvalidArgument(f"timeout_s must be seconds >= 0, got {timeout_s!r}")
        if isinstance(cpu_slots, bool) or not isinstance(cpu_slots, int) or cpu_slots < 1:
            raise InvalidArgument(f"cpu_slots must be an int >= 1, got {cpu_slots!r}")
        if isinstance(memory_mb, bool) or not isinstance(memory_mb, int) or not 0 <= memory_mb <= MAX_MEMORY_MB:
            raise InvalidArgument(f"memory_mb must be an int in [0, 2**40] (MiB; 0: no request), got {memory_mb!r}")
        self.fn, self.idempotent, self.max_attempts = fn, idempotent, max_attempts
        self.timeout_s, self.cpu_slots, self.memory_mb = float(timeout_s), cpu_slots, memory_mb
        if isinstance(fn, str):
            module, _, name = fn.partition(":")
            if not module or not name:
                raise InvalidArgument(f"a function reference is 'module:function', got {fn!r}")
        self.__name__ = fn if isinstance(fn, str) else getattr(fn, "__qualname__", type(fn).__name__)

    def __call__(self, *args, **kwargs):
        if isinstance(self.fn, str):
            from .worker import resolve_reference

            return resolve_reference(self.fn)(*args, **kwargs)
        return self.fn(*args, **kwargs)

    def __repr__(self):
        return f"tailcut.task({self.__name__}, idempotent={self.idempotent})"


def task(fn=None, *, idempotent=None, max_attempts=0, timeout_s=0.0, cpu_slots=1, memory_mb=0):
    """Task options for a function, as a call or a decorator:

        @tailcut.task(idempotent=True, timeout_s=30)
        def score(x): ...

    idempotent: running it twice is harmless, so the scheduler may copy a
    slow attempt (None: not idempotent, docs/POLICIES.md "Side effects");
    max_attempts: failed attempts (a worker that died, a lost executor)
    before the job fails, 0 the scheduler's default; timeout_s: per attempt;
    memory_mb: MiB it holds while running (placed only where that much is
    free; the worker is stopped past it, docs/JOBS.md "Memory")."""
    options = dict(idempotent=idempotent, max_attempts=max_attempts, timeout_s=timeout_s, cpu_slots=cpu_slots,
                   memory_mb=memory_mb)
    if fn is None:
        return lambda f: TaskFunction(f, **options)
    return TaskFunction(fn, **options)


def idempotent(fn):
    """Decorator: the function may run more than once (its copies race and
    the first result wins), so slow attempts get copies."""
    base = fn if isinstance(fn, TaskFunction) else TaskFunction(fn)
    return TaskFunction(base.fn, True, base.max_attempts, base.timeout_s, base.cpu_slots, base.memory_mb)

