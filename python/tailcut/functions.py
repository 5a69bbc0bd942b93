"""Python functions as tasks (docs/PYTHON.md, "Python functions"): the
`python` kernel runs them on warm worker processes of executors started
with --allow-python.

    with tailcut.Client() as c:
        futures = c.map(score, items)               # one job, in one message
        print(c.gather(futures))                    # results in order
        f = c.submit(train, data, epochs=3)         # batched with other submits
        print(f.result())

A function travels cloudpickled (the executor's Python must have this
client's major.minor: tasks demand the executor label `python`), or as a
"module:function" reference importable on the executors (any version).

Futures are resolved by the Client that made them, while the caller waits
on one of them (result, gather, as_completed): the Client is synchronous.
"""

import sys
import time
import types
import weakref

from . import _pickling
from .errors import InvalidArgument, JobFailed, TailcutError, Timeout, TooLarge, Unavailable
from ._futures import (  # noqa: F401 (tailcut.functions.Future etc. still resolve)
    CANCELLED, PENDING, CancelledError, Future, RemoteTraceback, TaskError, as_completed, check_timeout, gather,
    remote_exception)
from ._proto import pb
from ._taskfn import TaskFunction, idempotent, task  # noqa: F401

PYTHON_VERSION = "%d.%d" % sys.version_info[:2]
PYTHON_LABEL = "python"  # the executor label carrying Register.python_version
KERNEL = "python"
MAX_ARGS_BYTES = 16 << 20  # one task's pickled function + arguments
_JOB_BYTES = 24 << 20  # a job's tasks per submit message (the scheduler's limit is 64 MiB)
BATCH_TASKS = 4096  # pending submit()s sent as one job at this many
_VERSIONS_TTL_S = 5.0
_HAS_IDEMPOTENT = "idempotent" in pb.JobSpec.DESCRIPTOR.fields_by_name


class PythonVersionMismatch(InvalidArgument):
    """A pickled function was to be sent, but no executor runs this
    client's Python major.minor (cloudpickle's rule)."""


_CACHED_TYPES = (types.FunctionType, types.BuiltinFunctionType)


def _function_part(fn, cache):
    """(kind, bytes) of a function. `cache` maps functions to their pickle
    (weakly: a function nobody holds is dropped): a plain function is
    pickled once per Client, with its closure and globals as of then, as
    Dask does; other callables (bound methods, partials, objects) each time,
    as their state may change."""
    if isinstance(fn, str):
        return _pickling.KIND_REFERENCE, fn.encode("utf-8")
    cacheable = isinstance(fn, _CACHED_TYPES)
    part = cache.get(fn) if cacheable else None
    if part is None:
        try:
            import cloudpickle
        except ImportError:
            raise InvalidArgument("sending a Python function needs cloudpickle (Debian: python3-cloudpickle; "
                                  "pip: cloudpickle), or name it as 'module:function'") from None
        try:
            part = cloudpickle.dumps(fn, protocol=5)
        except Exception as e:
            name = getattr(fn, "__qualname__", type(fn).__name__)
            raise InvalidArgument(f"the function {name} does not pickle ({type(e).__name__}: {e}): a task's function "
                                  "travels to the executors, so it must not hold sockets, locks, open files or "
                                  "clients; create those inside the function, or name an importable one as "
                                  "'module:function'") from None
        if cacheable:
            try:
                cache[fn] = part
            except TypeError:  # not weakly referenceable (some builtins)
                pass
    return _pickling.KIND_PICKLED, part


MAX_PARENTS = 64  # jobs one job may run after (the scheduler's limit)


class _Entry:
    __slots__ = ("future", "payload", "pickled", "options", "task_class", "inputs")

    def __init__(self, future, payload, pickled, options, task_class, inputs=()):
        self.future, self.payload, self.pickled, self.options = future, payload, pickled, options
        self.task_class = task_class
        self.inputs = tuple(inputs)  # (job id, task index) of the Futures among its arguments


class FunctionTasks:
    """The Client's side of Python tasks: pending submits, the jobs sent,
    and the futures waiting on them."""

    def __init__(self, client):
        self.client = client
        self.pending = []
        self.jobs = {}  # job id -> {"futures": {index: unresolved Future}, "open": their count, "tasks": all}
        self.versions = None  # (time, {major.minor: [executor names]})
        self.poll_interval = 0.2
        self.reconnect_timeout = 60.0
        self.next_poll = 0.0  # when open jobs' statuses are asked next
        self.unanswered_since = None  # the scheduler has not answered since
        self.watchers = []  # deques of futures done: as_completed() and tailcut.Executor (watch_done)
        self.pickled = weakref.WeakKeyDictionary()  # function -> its pickle (_function_part)

    # ----------------------------------------------------------- submit --
    def make(self, fn, args, kwargs, options, check_version=True):
        """The task of fn(*args, **kwargs), encoded (an _Entry). Touches the
        scheduler only for the version check (tailcut.Executor calls it
        from the caller's thread with check_version=False, and checks on
        its own thread)."""
        tf = fn if isinstance(fn, TaskFunction) else None
        target = tf.fn if tf else fn
        if not (callable(target) or isinstance(target, str)):
            raise InvalidArgument(f"a task is a function or a 'module:function' string, got {type(target).__name__}")
        if isinstance(target, str):
            TaskFunction(target)  # checks the reference's form
        kind, part = _function_part(target, self.pickled)
        if kind == _pickling.KIND_PICKLED and check_version:
            self.check_version()
        args, kwargs, inputs = self.upstream(tuple(args), dict(kwargs))
        try:
            value = _pickling.dumps_value((args, kwargs))
        except Exception as e:
            raise InvalidArgument(f"the arguments of {getattr(target, '__qualname__', target)} do not pickle: {e}") from None
        payload = _pickling.task_payload(kind, part, value)
        if len(payload) > MAX_ARGS_BYTES:
            raise TooLarge(f"a task of {len(payload)} bytes (pickled function and arguments) is over the limit of "
                           f"{MAX_ARGS_BYTES} bytes: pass a path or a URL to the data instead")
        merged = dict(idempotent=None, max_attempts=0, timeout_s=0.0, cpu_slots=1, memory_mb=0)
        if tf:
            merged.update(idempotent=tf.idempotent, max_attempts=tf.max_attempts, timeout_s=tf.timeout_s,
                          cpu_slots=tf.cpu_slots, memory_mb=tf.memory_mb)
        if options.get("idempotent") is not None:
            merged["idempotent"] = options["idempotent"]
        task_class = options.get("task_class") or _task_class(target)
        return _Entry(Future(self), payload, kind == _pickling.KIND_PICKLED, merged, task_class, inputs)

    def upstream(self, args, kwargs):
        """Futures among the arguments become inputs (docs/PYTHON.md,
        "Futures as arguments"): the task runs after their tasks, and the
        worker gets their values in their place. Returns (args, kwargs,
        [(job, task)])."""
        inputs = []

        def ref(value):
            if not isinstance(value, Future):
                return value
            if value.owner is not self:
                raise InvalidArgument("a Future passed as an argument must come from the same Client")
            if value.state == PENDING:
                self.flush()  # it needs its job id: send what is pending
            if value.job_id is None:
                raise InvalidArgument(f"a Future passed as an argument was never sent: {value.exception(0)}")
            if value.cancelled():
                raise InvalidArgument(f"a Future passed as an argument was cancelled (task {value.task_index} of job "
                                      f"{value.job_id})")
            inputs.append((value.job_id, value.task_index))
            return _pickling.InputRef(len(inputs) - 1)

        args = tuple(ref(a) for a in args)
        kwargs = {k: ref(v) for k, v in kwargs.items()}
        if len({j for j, _ in inputs}) > MAX_PARENTS:
            raise InvalidArgument(f"a task's Future arguments come from more than {MAX_PARENTS} jobs")
        return args, kwargs, inputs

    def check_version(self):
        now = time.monotonic()
        if self.versions is None or now - self.versions[0] > _VERSIONS_TTL_S:
            found = {}
            for e in self.client.executors():
                if PYTHON_LABEL in e.labels:
                    found.setdefault(e.labels[PYTHON_LABEL], []).append(e.name)
            self.versions = (now, found)
        found = self.versions[1]
        if found and PYTHON_VERSION not in found:
            where = "; ".join(f"Python {v} on {', '.join(sorted(names)[:3])}" for v, names in sorted(found.items()))
            self.versions = None  # ask again next time: executors come and go
            raise PythonVersionMismatch(
                f"a pickled function needs an executor with this client's Python {PYTHON_VERSION} (cloudpickle "
                f"does not load across major.minor versions), and the executors run {where}: run the client with "
                "that Python, start executors whose `python` is this one, or name the function as "
                "'module:function' (importable on the executors; any version)")
        # No executor runs Python at all: the scheduler's refusal says how to enable it.

    def submit(self, fn, args, kwargs, options):
        entry = self.make(fn, args, kwargs, options)
        self.pending.append(entry)
        if len(self.pending) >= BATCH_TASKS:
            self.flush()
        return entry.future

    def map(self, fn, iterables, options):
        entries = [self.make(fn, items, {}, options) for items in zip(*iterables)]
        self.flush()  # what submit() left pending goes first
        self.send(entries, raise_errors=True)
        return [e.future for e in entries]

    def send_now(self, entries):
        """Sends made entries (make()) at once, as tailcut.Executor's thread
        does: the version check first when one is pickled; every refusal or
        failure goes to the entries' futures, nothing is raised."""
        if any(e.pickled for e in entries):
            try:
                self.check_version()
            except TailcutError as err:
                for e in entries:
                    self.fail_future(e.future, err)
                return
        try:
            self.send(entries, raise_errors=False)
        except Exception as err:  # noqa: BLE001 (refusals are set per future; anything else too)
            for e in entries:
                if not e.future.done():
                    self.fail_future(e.future, err)

    def flush(self):
        """Sends pending submits, one job per kind (options) and size; a
        refusal is set on their futures."""
        entries, self.pending = self.pending, []
        if entries:
            self.send(entries, raise_errors=False)

    def send(self, entries, raise_errors):
        groups = {}
        for e in entries:
            o = e.options
            # Tasks with Future arguments go with those of the same parent jobs
            # (a job may run after at most MAX_PARENTS jobs).
            parents = tuple(sorted({j for j, _ in e.inputs}))
            groups.setdefault((o["idempotent"], o["max_attempts"], parents), []).append(e)
        for (idem, attempts, _), group in groups.items():
            start = 0
            while start < len(group):
                end, size = start, 0
                while end < len(group) and (end == start or size + len(group[end].payload) < _JOB_BYTES):
                    size += len(group[end].payload)
                    end += 1
                self.send_job(group[start:end], idem, attempts, raise_errors)
                start = end

    def send_job(self, entries, idem, attempts, raise_errors):
        req = pb.ClientRequest()
        spec = req.submit.job
        spec.name = f"python x{len(entries)}"
        spec.return_outputs = True
        spec.stream_results = True
        if attempts:
            spec.max_attempts = attempts
        if _HAS_IDEMPOTENT:
            spec.idempotent = bool(idem)
        add = spec.tasks.add
        for e in entries:
            t = add()
            t.kernel = KERNEL
            t.args = e.payload
            if e.options["cpu_slots"] != 1:
                t.demand.cpu_slots = e.options["cpu_slots"]
            if e.options["memory_mb"]:
                t.demand.memory_mb = e.options["memory_mb"]
            if e.options["timeout_s"]:
                t.timeout_s = e.options["timeout_s"]
            if e.pickled:
                t.demand.labels[PYTHON_LABEL] = PYTHON_VERSION
            t.features.task_class = e.task_class
            for job, index in e.inputs:
                t.inputs.add(job_id=job, task_index=index)
        try:
            job = self.client.submit_request(req)
        except TailcutError as err:
            if raise_errors:
                raise
            for e in entries:
                self.fail_future(e.future, err)
            return
        futures = {}
        for i, e in enumerate(entries):
            e.future.mark_sent(job, i)
            futures[i] = e.future
        self.jobs[job] = {"futures": futures, "open": len(entries), "tasks": len(entries)}

    # -------------------------------------------------------- resolving --
    def resolve(self, job, results):
        state = self.jobs.get(job)
        if state is None:
            return
        futures = state["futures"]
        for r in results:
            f = futures.pop(r.task_index, None)
            if f is None:
                continue
            state["open"] -= 1
            if f.cancelled():
                continue
            f.executor_id, f.attempt_id, f.run_s, f.copy = r.executor_id, r.attempt_id, r.run_s, r.copy
            try:
                status, f.stdout, f.stderr, value = _pickling.parse_result(_pickling.writable_result(r.output))
            except Exception as e:
                f.set_exception(TailcutError(f"task {r.task_index} of job {job}: its result does not unpickle here: {e}"))
            else:
                if status == _pickling.OK:
                    f.set_result(value)
                else:
                    f.set_exception(remote_exception(value, f.stdout, f.stderr))
            self.finished(f)
        if state["open"] <= 0:
            self.forget(job)

    def forget(self, job):
        self.jobs.pop(job, None)
        self.client.unsubscribe(job)

    def fail(self, job, status):
        state = self.jobs.get(job)
        if state is None:
            return
        err = JobFailed(status)
        for f in state["futures"].values():
            if not f.cancelled():
                self.fail_future(f, err)
        self.forget(job)

    def fail_open(self, err):
        """Every unfinished future of the jobs sent gets `err` (the scheduler
        gone for good: tailcut.Executor's thread)."""
        for job, state in list(self.jobs.items()):
            for f in state["futures"].values():
                if not f.done():
                    self.fail_future(f, err)
            self.forget(job)

    def fail_future(self, f, err):
        f.set_exception(err)
        self.finished(f)

    def take_pushes(self):
        for job in list(self.jobs):
            for r in self.client.take_pushed(job):
                if r.HasField("results"):
                    self.resolve(job, r.results.results)

    def poll(self):
        """Asks each open job's status; fills in what pushes missed (a
        scheduler restart ends push streams) and fails what failed."""
        client = self.client
        for job in list(self.jobs):
            req = pb.ClientRequest()
            req.status.job_id = job
            st = client.call(req)
            self.take_pushes()
            state = self.jobs.get(job)
            if state is None:
                continue
            resolved = state["tasks"] - state["open"]
            if st.status.committed > resolved:
                req = pb.ClientRequest()
                req.results.job_id = job
                self.resolve(job, list(client.call(req).results.results))
            if _job_done(st.status):
                state = self.jobs.get(job)
                if state is not None:
                    self.fail(job, client.checked_status(job, st.status))

    def wait(self, futures, timeout=None):
        """Pumps results until every future in `futures` is done, or raises
        Timeout."""
        timeout = check_timeout(timeout)
        futures = [f for f in futures if not f.done()]
        if any(f.state == PENDING for f in futures):
            self.flush()
        deadline = None if timeout is None else time.monotonic() + timeout
        i = 0  # futures[:i] are done: each is looked at about once (done stays done)
        while True:
            while i < len(futures) and futures[i].done():
                i += 1
            if i == len(futures):
                return
            self.pump(deadline, futures)

    def pump(self, deadline=None, futures=()):
        """One turn: kept pushes, one receive (until the next status poll),
        or a status poll of the open jobs. Timeout past `deadline`."""
        self.take_pushes()
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            raise Timeout(f"{sum(1 for f in futures if not f.done())} task(s) not done after the timeout")
        if now < self.next_poll:
            wait = self.next_poll - now if deadline is None else min(self.next_poll - now, deadline - now)
            self.client.receive_pushes(max(wait, 0))
            return
        try:
            self.poll()
        except Unavailable:
            # The scheduler may be restarting (with its journal the jobs go on): keep asking a while.
            now = time.monotonic()
            if self.unanswered_since is None:
                self.unanswered_since = now - self.client.timeout
            if now - self.unanswered_since > self.reconnect_timeout:
                self.unanswered_since = None
                raise
        else:
            if self.unanswered_since is not None:
                self.rewatch()
            self.unanswered_since = None
        self.next_poll = time.monotonic() + self.poll_interval

    def finished(self, f):
        """Called once per future as it becomes done: as_completed() hears of it."""
        for queue in self.watchers:
            queue.append(f)

    def watch_done(self, queue):
        """Appends each future to `queue` (a deque) as it finishes, until unwatch_done(queue)."""
        self.watchers.append(queue)

    def unwatch_done(self, queue):
        self.watchers.remove(queue)

    def rewatch(self):
        """After the scheduler came back: new watches, so pushes flow again."""
        for job in list(self.jobs):
            self.client.watch_job(job)

    def cancel(self, f):
        if f.done():
            return False
        if f.state == PENDING:
            self.pending = [e for e in self.pending if e.future is not f]
            f.mark_cancelled()
            self.finished(f)
            return True
        f.mark_cancelled()
        self.finished(f)
        state = self.jobs.get(f.job_id)
        if state is not None and all(x.state == CANCELLED for x in state["futures"].values()):
            self.client.cancel(f.job_id)
            self.forget(f.job_id)
        return True


def _task_class(target):
    """The predictors' task class: one per function, so a no-op and a
    training step are not one latency distribution (the scheduler caps
    names at 256 bytes)."""
    if isinstance(target, str):
        name = target
    else:
        name = f"{getattr(target, '__module__', None) or '?'}:{getattr(target, '__qualname__', type(target).__name__)}"
    return ("python:" + name)[:200]


def _job_done(status):
    return status.state in (pb.JOB_SUCCEEDED, pb.JOB_FAILED, pb.JOB_CANCELLED)


