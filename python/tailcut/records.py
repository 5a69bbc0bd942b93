"""The client's reply records: a job's status, a task's result, an attempt
trace, an executor, each parsed from its wire message (docs/PROTOCOL.md).
tailcut.client re-exports them."""

from dataclasses import dataclass, field
from typing import Dict, List

from ._proto import pb

TERMINAL = ("succeeded", "failed", "cancelled")  # the final JobStatus.state values


def state_name(value):
    """A wire JobState as JobStatus.state spells it ("running", ...)."""
    name = pb.JobState.Name(value)
    return "unknown" if value == pb.JOB_STATE_UNSPECIFIED else name[len("JOB_") :].lower()


@dataclass(frozen=True)
class JobStatus:
    """A job's state: "queued", "running", "succeeded", "failed" or
    "cancelled", with its counters (wire JobStatus)."""

    job_id: int
    name: str
    state: str
    tasks: int  # tasks in the job
    committed: int  # tasks with a committed result
    running: int  # live attempts
    attempts: int  # attempts launched so far
    copies: int  # of those, redundant copies (speculative, clones, hedges)
    failed_attempts: int
    reason: str  # why it failed or was cancelled
    submitted_at_s: float  # scheduler clock
    finished_at_s: float  # 0 while not finished
    owner: str  # the submitting key, or "user:NAME" without keys
    request_key: str
    # Tasks refused a copy, clone, hedge or restart: not idempotent.
    copies_refused_side_effects: int = 0
    priority: int = 0  # JobSpec.priority
    # Copies cancelled so another job's first attempt could have the slot.
    copies_preempted: int = 0
    # Jobs it runs after (JobSpec.after), and those not finished yet (while "queued").
    after: tuple = ()
    waiting_for: tuple = ()

    @property
    def done(self):
        return self.state in TERMINAL

    @property
    def succeeded(self):
        return self.state == "succeeded"

    @classmethod
    def from_wire(cls, s):
        return cls(
            s.job_id, s.name, state_name(s.state), s.tasks, s.committed, s.running, s.attempts, s.copies,
            s.failed_attempts, s.reason, s.submitted_at_s, s.finished_at_s, s.owner, s.request_key,
            s.copies_refused_side_effects, s.priority, s.copies_preempted, tuple(s.after), tuple(s.waiting_for),
        )


@dataclass(frozen=True)
class TaskResult:
    """The committed result of one task: its output bytes (`text` decodes
    them), which attempt and executor produced it, and its run time."""

    task_index: int
    output: bytes
    executor_id: int
    attempt_id: int
    run_s: float

    @property
    def text(self):
        return self.output.decode("utf-8", errors="replace")

    @classmethod
    def from_wire(cls, r):
        return cls(r.task_index, bytes(r.output), r.executor_id, r.attempt_id, r.run_s)


@dataclass(frozen=True)
class TraceAttempt:
    """One committed attempt of a job, as a row of an attempt trace
    (docs/TRACE_FORMAT.md): times in seconds on the scheduler's clock."""

    task: int
    executor_id: int
    start_s: float
    end_s: float
    task_class: str
    input_size: float  # 0 = unknown


@dataclass(frozen=True)
class JobTrace:
    """A job's committed attempts the scheduler still holds in memory (its
    newest scheduler.trace_memory_rows rows of all jobs): `complete` when
    every committed task has its row (rows go when newer ones overwrite
    them, and with a scheduler restart)."""

    job_id: int
    state: str
    committed: int
    attempts: List[TraceAttempt]
    ring_rows: int

    @property
    def complete(self):
        return len(self.attempts) == self.committed

    def csv(self):
        """The trace as text in the format `tailcut whatif` reads."""
        lines = ["job,task,executor,start,end,task_class,input_size,straggler,fail_slow"]
        for a in self.attempts:
            cls = a.task_class.replace(",", "_").replace("\n", "_").replace("\r", "_") or "task"
            lines.append(f"{self.job_id},{a.task},{a.executor_id},{a.start_s:.6f},{a.end_s:.6f},{cls},"
                         f"{a.input_size:g},,")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_wire(cls, t):
        attempts = [TraceAttempt(a.task, a.executor, a.start_s, a.end_s, a.task_class, a.input_size)
                    for a in t.attempts]
        return cls(t.job_id, state_name(t.state), t.committed, attempts, t.ring_rows)


@dataclass(frozen=True)
class ExecutorInfo:
    """One registered executor; `health` is "healthy", "suspect",
    "fail_slow" or "recovered", `speed_factor` its run time over the fleet's
    (1 = typical)."""

    executor_id: int
    name: str
    host: str
    cpu_slots: int
    gpus: int
    labels: Dict[str, str] = field(hash=False)
    running: int
    finished: int
    quarantined: bool
    health: str
    speed_factor: float
    last_seen_s_ago: float

    @classmethod
    def from_wire(cls, e):
        return cls(
            e.executor_id, e.name, e.host, e.cpu_slots, e.gpus, dict(e.labels), e.running, e.finished,
            e.quarantined, pb.ExecutorHealth.State.Name(e.health.state).lower(), e.health.speed_factor,
            e.last_seen_s_ago,
        )
