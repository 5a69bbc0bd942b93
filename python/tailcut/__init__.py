"""tailcut: submit jobs to a tailcut scheduler from Python (docs/PYTHON.md).

    import tailcut
    with tailcut.Client("tcp://127.0.0.1:7701") as c:
        job = c.submit(tailcut.fanout("sleep", "ms=20", tasks=100))
        print(c.wait(job).state, len(c.results(job)))

Needs pyzmq and protobuf: Debian's python3-zmq and python3-protobuf, or
`pip install ./python` into any environment (docs/PYTHON.md); without them
the import fails with one line saying what to install.
"""

from ._requires import check as _check

_check()  # before anything imports zmq or the protocol module

__version__ = "0.1.0"  # the project's version (CMakeLists.txt); ctest python_venv_install compares them

from .errors import (
    Busy,
    Infeasible,
    Internal,
    InvalidArgument,
    JobFailed,
    NotYourJob,
    Refused,
    TailcutError,
    Timeout,
    TooLarge,
    Unavailable,
    UnknownJob,
    UnknownKernel,
)
from .jobs import Job, Task, exec_args, fanout, k_of_n, quorum
from .client import Client, ExecutorInfo, JobStatus, JobTrace, TaskResult, TraceAttempt, new_request_key
from .local import LocalCluster
from ._futures import CancelledError, Future, RemoteTraceback, TaskError, as_completed, gather
from ._taskfn import TaskFunction, idempotent, task
from .functions import PythonVersionMismatch
from ._task import progress
from .executor import Executor, Future as ExecutorFuture
from .aio import AsyncClient
from . import _hooks

_hooks.register_joblib_when_imported()

# The documented names are the ones tracebacks and reprs show: an exception
# re-raised from a task has a `tailcut.RemoteTraceback` as its cause, not
# `tailcut._futures.RemoteTraceback` (pickling finds them here too).
for _cls in (CancelledError, Future, RemoteTraceback, TaskError, TaskFunction):
    if _cls.__module__.startswith("tailcut._"):
        _cls.__module__ = "tailcut"
del _cls

__all__ = [
    "Busy", "Client", "ExecutorInfo", "Infeasible", "Internal", "InvalidArgument", "Job", "JobFailed",
    "JobStatus", "JobTrace", "LocalCluster", "NotYourJob", "Refused", "TailcutError", "Task", "TaskResult", "Timeout", "TraceAttempt",
    "TooLarge", "Unavailable", "UnknownJob", "UnknownKernel", "exec_args", "fanout", "k_of_n", "new_request_key", "quorum",
    "CancelledError", "Future", "PythonVersionMismatch", "RemoteTraceback", "TaskError", "TaskFunction",
    "as_completed", "gather", "idempotent", "task", "progress", "Executor", "ExecutorFuture", "AsyncClient",
]
