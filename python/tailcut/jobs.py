"""Job descriptions: what Client.submit() takes.

A Job is explicit `tasks` and/or `count` copies of a `template` task (the
compact fan-out form on the wire), plus a completion rule:

  "all"     every task commits (default)
  "k_of_n"  any `k` tasks commit; the rest are cancelled (coded work)
  "quorum"  closes at `k` commits or `deadline_s` after submission, whichever
            is first; succeeds with at least `min_count` commits

fanout(), k_of_n() and quorum() build the common shapes. Inputs are checked
here, before anything is sent, so a mistake names the field; what depends on
the cluster (which kernels run, the scheduler's caps) is the scheduler's to
judge.
"""

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union

from .errors import InvalidArgument
from ._proto import pb

_RULES = {"all": 0, "k_of_n": 1, "quorum": 2}  # CompletionRule.Kind
_UINT32_MAX = 2**32 - 1
MAX_MEMORY_MB = 2**40  # Resources.memory_mb at most (docs/LIMITS.md)


def _check_uint(value, name, minimum=0, maximum=_UINT32_MAX):
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{name} must be an integer, got {value!r}")
    if not minimum <= value <= maximum:
        raise InvalidArgument(f"{name} must be in [{minimum}, {maximum}], got {value}")


def _check_job_id(value, name):
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < 2**64:
        raise InvalidArgument(f"{name} must be a job id (an integer >= 1), got {value!r}")


def _check_seconds(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InvalidArgument(f"{name} must be a finite number of seconds >= 0, got {value!r}")


@dataclass
class Task:
    """One task: a kernel and its argument bytes (docs/KERNELS.md; the
    built-in kernels take text such as "ms=50", `shell` a command line).
    A str `args` is sent as UTF-8."""

    kernel: str
    args: Union[str, bytes] = b""
    cpu_slots: int = 1
    gpus: int = 0  # whole devices, each attempt its own (docs/GPU.md)
    # MiB it holds while running: placement keeps an executor's requests
    # within its memory, program tasks are stopped past it (docs/JOBS.md,
    # "Memory"); 0 = no request.
    memory_mb: int = 0
    labels: Dict[str, str] = field(default_factory=dict)  # executor must carry all
    timeout_s: float = 0  # per attempt; 0 = the scheduler's core.task_timeout_s
    input_size: float = 0  # predictor hint, any unit consistent within a job
    task_class: str = ""  # predictor grouping; "" = the kernel name
    # Running it twice is harmless (copies, clones, hedges, restarts
    # allowed); None = the job's `idempotent`, else the kernel's default
    # (docs/POLICIES.md, "Side effects").
    idempotent: Optional[bool] = None
    # The executor replaces {index} and {count} in args with the task's
    # index and the job's task count; None = when args hold either.
    args_template: Optional[bool] = None
    # Upstream outputs this task takes (docs/JOBS.md, "Task inputs"): (job
    # id, task index) pairs, task index None for every task of the job; the
    # job runs after those jobs.
    inputs: List[tuple] = field(default_factory=list)

    def validate(self, where="task"):
        if not isinstance(self.kernel, str) or not self.kernel:
            raise InvalidArgument(f"{where}.kernel must be a non-empty kernel name, got {self.kernel!r}")
        if not isinstance(self.args, (str, bytes, bytearray)):
            raise InvalidArgument(f"{where}.args must be str or bytes, got {type(self.args).__name__}")
        _check_uint(self.cpu_slots, f"{where}.cpu_slots", 1)
        _check_uint(self.gpus, f"{where}.gpus")
        _check_uint(self.memory_mb, f"{where}.memory_mb", 0, MAX_MEMORY_MB)
        if not isinstance(self.labels, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.labels.items()
        ):
            raise InvalidArgument(f"{where}.labels must map str to str, got {self.labels!r}")
        _check_seconds(self.timeout_s, f"{where}.timeout_s")
        if isinstance(self.input_size, bool) or not isinstance(self.input_size, (int, float)) or not (
            math.isfinite(self.input_size) and self.input_size >= 0
        ):
            raise InvalidArgument(f"{where}.input_size must be a finite number >= 0, got {self.input_size!r}")
        if not isinstance(self.task_class, str):
            raise InvalidArgument(f"{where}.task_class must be a str, got {self.task_class!r}")
        for name in ("idempotent", "args_template"):
            if getattr(self, name) not in (None, True, False):
                raise InvalidArgument(f"{where}.{name} must be True, False or None, got {getattr(self, name)!r}")
        for ref in self.inputs:
            if not (isinstance(ref, tuple) and len(ref) == 2):
                raise InvalidArgument(f"{where}.inputs holds (job id, task index or None) pairs, got {ref!r}")
            _check_job_id(ref[0], f"{where}.inputs job id")
            if ref[1] is not None:
                _check_uint(ref[1], f"{where}.inputs task index")

    def to_wire(self, out):
        out.kernel = self.kernel
        out.args = self.args.encode() if isinstance(self.args, str) else bytes(self.args)
        out.demand.cpu_slots = self.cpu_slots
        out.demand.gpus = self.gpus
        out.demand.memory_mb = self.memory_mb
        for k, v in self.labels.items():
            out.demand.labels[k] = v
        out.timeout_s = float(self.timeout_s)
        out.features.input_size = float(self.input_size)
        out.features.task_class = self.task_class
        if self.idempotent is not None:
            out.idempotent = bool(self.idempotent)
        templated = self.args_template
        if templated is None:
            templated = b"{index}" in out.args or b"{count}" in out.args
        out.args_template = bool(templated)
        for job, task in self.inputs:
            if task is None:
                out.inputs.add(job_id=job, all_tasks=True)
            else:
                out.inputs.add(job_id=job, task_index=task)


@dataclass
class Job:
    """A job. Task i is tasks[i] for i < len(tasks), then the template."""

    tasks: List[Task] = field(default_factory=list)
    template: Optional[Task] = None
    count: int = 0  # copies of `template`
    name: str = ""
    rule: str = "all"  # "all" | "k_of_n" | "quorum"
    k: int = 0  # k_of_n, quorum: commits needed
    min_count: int = 0  # quorum: fewest commits that still succeed
    deadline_s: float = 0  # quorum: seconds after submission; 0 = none
    max_attempts: int = 0  # failed attempts per task; 0 = the scheduler's default
    wait_for_resources: bool = False  # True: wait for an executor that can run it
    # Keep outputs on the scheduler for Client.results(); also lets
    # as_completed() fill in results committed before it started watching.
    # On by default here (the C++ client's default is off): Python callers
    # nearly always want the outputs. Turn off for huge jobs whose outputs
    # nobody reads.
    return_outputs: bool = True
    # Push results to this client from the first commit on (they wait in the
    # client until as_completed() reads them).
    stream_results: bool = False
    timeout_s: float = 0  # whole job; 0 = the scheduler's core.job_timeout_s
    request_key: str = ""  # idempotency key; "" = Client.submit() picks one
    # The tasks' default for Task.idempotent; None = each kernel's own
    # (the pure built-ins yes; shell, exec and plugin kernels no).
    idempotent: Optional[bool] = None
    # Attempt-scoped output (docs/JOBS.md, "Output directories"): an absolute
    # directory on the executors' disk or a shared file system; the committed
    # attempt's files end up in output_dir/task-<index>. Needs rule "all".
    output_dir: str = ""
    # Jobs this one runs after (docs/JOBS.md, "Dependencies"): it is queued
    # until each has succeeded, and fails (or is cancelled) with them.
    after: List[int] = field(default_factory=list)
    # Orders your own jobs, higher first (-1000..1000); across owners the
    # weighted fair share decides (docs/POLICIES.md, "Owners").
    priority: int = 0

    @property
    def total_tasks(self):
        return len(self.tasks) + (self.count if self.template is not None else 0)

    def validate(self):
        if not isinstance(self.tasks, (list, tuple)) or not all(isinstance(t, Task) for t in self.tasks):
            raise InvalidArgument("tasks must be a list of tailcut.Task")
        for i, t in enumerate(self.tasks):
            t.validate(f"tasks[{i}]")
        _check_uint(self.count, "count")
        if self.template is not None:
            if not isinstance(self.template, Task):
                raise InvalidArgument("template must be a tailcut.Task")
            self.template.validate("template")
        elif self.count:
            raise InvalidArgument(f"count is {self.count} but there is no template task to copy")
        n = self.total_tasks
        if n == 0:
            raise InvalidArgument("the job has no tasks (give tasks=[...], or a template with count >= 1)")
        if n > _UINT32_MAX:
            raise InvalidArgument(f"the job has {n} tasks; the protocol allows at most {_UINT32_MAX}")
        if self.rule not in _RULES:
            raise InvalidArgument(f"rule must be one of {', '.join(_RULES)}, got {self.rule!r}")
        _check_uint(self.k, "k")
        _check_uint(self.min_count, "min_count")
        _check_seconds(self.deadline_s, "deadline_s")
        if self.rule == "all":
            if self.k or self.min_count or self.deadline_s:
                raise InvalidArgument("k, min_count and deadline_s belong to rule 'k_of_n' or 'quorum', not 'all'")
        else:
            if not 1 <= self.k <= n:
                raise InvalidArgument(f"{self.rule} needs 1 <= k <= tasks (k={self.k}, tasks={n})")
            if self.rule == "k_of_n" and (self.min_count or self.deadline_s):
                raise InvalidArgument("min_count and deadline_s belong to rule 'quorum', not 'k_of_n'")
            if self.min_count > self.k:
                raise InvalidArgument(f"quorum needs min_count <= k (min_count={self.min_count}, k={self.k})")
        _check_uint(self.max_attempts, "max_attempts")
        _check_seconds(self.timeout_s, "timeout_s")
        if not isinstance(self.name, str) or not isinstance(self.request_key, str):
            raise InvalidArgument("name and request_key must be str")
        if self.idempotent not in (None, True, False):
            raise InvalidArgument(f"idempotent must be True, False or None, got {self.idempotent!r}")
        if not isinstance(self.output_dir, str):
            raise InvalidArgument("output_dir must be str")
        if not isinstance(self.after, (list, tuple)):
            raise InvalidArgument(f"after must be a list of job ids, got {self.after!r}")
        for job in self.after:
            _check_job_id(job, "after")
        if isinstance(self.priority, bool) or not isinstance(self.priority, int) or not -1000 <= self.priority <= 1000:
            raise InvalidArgument(f"priority must be an int in -1000..1000, got {self.priority!r}")
        # The scheduler checks the form (absolute, normal, rule all) and says why.

    def to_wire(self):
        self.validate()
        spec = pb.JobSpec(
            name=self.name,
            template_count=self.count if self.template is not None else 0,
            max_attempts=self.max_attempts,
            wait_for_resources=bool(self.wait_for_resources),
            stream_results=bool(self.stream_results),
            return_outputs=bool(self.return_outputs),
            timeout_s=float(self.timeout_s),
            request_key=self.request_key,
            output_dir=self.output_dir,
            priority=self.priority,
        )
        for t in self.tasks:
            t.to_wire(spec.tasks.add())
        if self.template is not None:
            self.template.to_wire(getattr(spec, "template"))
        spec.rule.kind = _RULES[self.rule]
        spec.rule.k = self.k
        spec.rule.min_count = self.min_count
        spec.rule.deadline_s = float(self.deadline_s)
        if self.idempotent is not None:
            spec.idempotent = bool(self.idempotent)
        spec.after.extend(self.after)
        return spec


def exec_args(argv, env=None, cwd="", cpu_s=0, memory_mb=0):
    """The `exec` kernel's argument text (docs/KERNELS.md, "exec"): argv
    (the first an absolute program path), an environment dict, a working
    directory and limits. {index} and {count} in it are expanded per task."""
    if isinstance(argv, (str, bytes)) or not argv or not all(isinstance(a, str) for a in argv):
        raise InvalidArgument(f"argv must be a non-empty list of str, got {argv!r}")
    lines = [f"arg={a}" for a in argv]
    lines += [f"env={k}={v}" for k, v in (env or {}).items()]
    if cwd:
        lines.append(f"cwd={cwd}")
    if cpu_s:
        lines.append(f"cpu_s={float(cpu_s)!r}")
    if memory_mb:
        _check_uint(memory_mb, "memory_mb")
        lines.append(f"memory_mb={memory_mb}")
    if any("\n" in line for line in lines):
        raise InvalidArgument("exec arguments cannot hold a line break")
    return "\n".join(lines) + "\n"


def fanout(kernel, args=b"", tasks=1, **job_options):
    """`tasks` identical tasks, all of which must commit."""
    name = job_options.pop("name", f"{kernel} x{tasks}")
    return Job(template=Task(kernel, args), count=tasks, name=name, **job_options)


def k_of_n(kernel, args=b"", n=1, k=1, **job_options):
    """`n` identical tasks; the job succeeds when any `k` commit. For tasks
    that differ (coded work), use Job(tasks=[...], rule="k_of_n", k=k)."""
    name = job_options.pop("name", f"{kernel} {k} of {n}")
    return Job(template=Task(kernel, args), count=n, name=name, rule="k_of_n", k=k, **job_options)


def quorum(kernel, args=b"", n=1, k=1, min_count=0, deadline_s=0, **job_options):
    """`n` identical tasks; closes at `k` commits or `deadline_s`, succeeds
    with at least `min_count` (federated-learning rounds)."""
    name = job_options.pop("name", f"{kernel} quorum {k} of {n}")
    return Job(
        template=Task(kernel, args),
        count=n,
        name=name,
        rule="quorum",
        k=k,
        min_count=min_count,
        deadline_s=deadline_s,
        **job_options,
    )
