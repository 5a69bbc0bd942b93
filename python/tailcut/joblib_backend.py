"""joblib backend "tailcut" (docs/PYTHON.md, "joblib and scikit-learn"):
joblib.Parallel and scikit-learn's n_jobs work as tailcut tasks.

    import joblib, tailcut
    with joblib.parallel_backend("tailcut"):            # a local cluster
        GridSearchCV(SVC(), grid, n_jobs=-1).fit(X, y)
    with joblib.parallel_backend("tailcut", scheduler="tcp://sched:7701", idempotent=False):
        ...

`import tailcut` registers it once joblib is imported (before or after);
`tailcut.joblib_backend.register()` does it by hand. Each of joblib's
batches (joblib.parallel.BatchedCalls, sized by joblib's auto-batching to
take about a second) is one task.

Idempotent by default only where the work is pure: a batch may get copies
of a slow attempt when every call in it is scikit-learn's own (a function
of a `sklearn.` module: fitting and scoring copies of estimators, which
return results and write nothing) or a function marked with
`@tailcut.idempotent`; anything else is not, as a joblib function may
write files. `idempotent=True/False` decides for every batch.
"""

import functools

from joblib._parallel_backends import AutoBatchingMixin, ParallelBackendBase, SequentialBackend
from joblib.parallel import register_parallel_backend

from ._taskfn import TaskFunction
from .executor import Executor

PURE_MODULES = ("sklearn.",)  # whose joblib work is pure (see the module's docstring)
_shared = {}  # executor options -> Executor, shared by the backends made with them (one local cluster)


def _shared_executor(options):
    key = tuple(sorted(options.items()))
    ex = _shared.get(key)
    if ex is None or ex.closed:
        ex = _shared[key] = Executor(**options)
    return ex


def _target(fn):
    """The function a joblib call runs, below sklearn's and functools' wrappers."""
    for _ in range(16):
        if isinstance(fn, TaskFunction):
            return fn
        inner = getattr(fn, "function", None) or getattr(fn, "func", None) or getattr(fn, "__wrapped__", None)
        if inner is None or inner is fn:
            return fn
        fn = inner
    return fn


def is_pure(fn):
    """True when a joblib call of `fn` may run twice: scikit-learn's own
    work, or a function marked @tailcut.idempotent."""
    t = _target(fn)
    if isinstance(t, TaskFunction):
        return bool(t.idempotent)
    module = getattr(t, "__module__", None) or ""
    return module.startswith(PURE_MODULES)


def _name(fn):
    t = _target(fn)
    t = t.fn if isinstance(t, TaskFunction) else t
    return f"{getattr(t, '__module__', '?')}:{getattr(t, '__qualname__', type(t).__name__)}"


class TailcutBackend(AutoBatchingMixin, ParallelBackendBase):
    """joblib.parallel_backend("tailcut", executor=None, idempotent=None,
    **tailcut.Executor options): `executor` a running tailcut.Executor to
    use; else one made from the options, shared by every backend with the
    same options (a local cluster when they name no scheduler), finishing
    at interpreter exit as every tailcut.Executor does."""

    supports_timeout = True
    supports_sharedmem = False

    def __init__(self, executor=None, idempotent=None, nesting_level=None, inner_max_num_threads=None,
                 **executor_options):
        super().__init__(nesting_level=nesting_level, inner_max_num_threads=inner_max_num_threads)
        if idempotent is not None and not isinstance(idempotent, bool):
            raise TypeError(f"idempotent must be True, False or None, got {idempotent!r}")
        if executor is not None and executor_options:
            raise TypeError("pass either executor= or the options of a new tailcut.Executor, not both")
        self._executor, self._options, self.idempotent = executor, executor_options, idempotent
        self._futures = set()

    def __reduce__(self):
        # A batch carries its nested backend (sequential, below), not this one;
        # anything else pickling a backend gets a fresh, unconnected one.
        return (TailcutBackend, ())

    @property
    def executor(self):
        if self._executor is None:
            self._executor = _shared_executor(self._options)
        return self._executor

    def configure(self, n_jobs=1, parallel=None, prefer=None, require=None, **backend_args):
        if require == "sharedmem":
            raise ValueError("the tailcut backend runs calls in other processes: it cannot share memory "
                             "(require='sharedmem'); use joblib's threading backend for that")
        self.parallel = parallel
        return self.effective_n_jobs(n_jobs)

    def effective_n_jobs(self, n_jobs):
        if n_jobs == 0:
            raise ValueError("n_jobs == 0 in Parallel has no meaning")
        if n_jobs is not None and n_jobs > 0:
            return n_jobs
        slots = self.executor.slots()
        if n_jobs is not None and n_jobs < -1:  # joblib: -2 is all but one
            slots += n_jobs + 1
        return max(1, slots)

    def get_nested_backend(self):
        # Inside a task: the worker's own process, sequentially (a task does
        # not start tasks of its own).
        return SequentialBackend(nesting_level=(self.nesting_level or 0) + 1), None

    def apply_async(self, func, callback=None):
        items = getattr(func, "items", None) or [(func, (), {})]
        pure = self.idempotent if self.idempotent is not None else all(is_pure(f) for f, _, _ in items)
        options = {"idempotent": pure, "task_class": "python:joblib:" + _name(items[0][0])[:160]}
        future = self.executor.submit_task(func, (), {}, options)
        self._futures.add(future)
        future.add_done_callback(functools.partial(self._done, callback))
        return future

    def _done(self, callback, future):
        self._futures.discard(future)
        if callback is not None and not future.cancelled() and future.exception() is None:
            callback(future.result())

    def abort_everything(self, ensure_ready=True):
        for f in list(self._futures):
            f.cancel()  # those not sent yet; the rest finish, their results unread
        self._futures.clear()


def register():
    """Registers the "tailcut" joblib backend (idempotent)."""
    register_parallel_backend("tailcut", TailcutBackend)


register()

