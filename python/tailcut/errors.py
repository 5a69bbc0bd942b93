"""Typed errors. Each carries the scheduler's message (what to change) and,
when the scheduler sent it, the protocol's error code name (`Error.Code` in
wire/proto/tailcut.proto, e.g. "UNKNOWN_JOB"); `code` is None for errors the
client found itself."""


class TailcutError(Exception):
    """Base of every error this package raises."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.message = message
        self.code = code

    def __str__(self):
        return f"{self.message} [{self.code}]" if self.code else self.message


class InvalidArgument(TailcutError, ValueError):
    """The request is wrong as sent: found by the client before sending, or
    the scheduler's INVALID_ARGUMENT, BAD_MESSAGE or VERSION_MISMATCH."""


class UnknownJob(TailcutError, LookupError):
    """No job with that id (never existed, expired, or lost in a scheduler
    restart without its journal)."""


class NotYourJob(TailcutError, PermissionError):
    """The job belongs to another owner (another key, or another user)."""


class UnknownKernel(TailcutError):
    """No registered executor offers that kernel (shell: only executors
    started with --allow-shell do)."""


class Infeasible(TailcutError):
    """No executor can ever satisfy what the tasks ask for (slots, a GPU,
    labels)."""


class Busy(TailcutError):
    """Over a scheduler cap that frees up later: retry later. The message
    names the cap and its value."""


class TooLarge(TailcutError):
    """Beyond a limit the request can never fit (tasks per job, message
    size): change the request."""


class Refused(TailcutError, PermissionError):
    """The scheduler refused this client's key (the CURVE handshake failed,
    or UNAUTHENTICATED: not, or no longer, in its trusted keys), or wants
    keys this client does not have."""


class Unavailable(TailcutError, ConnectionError):
    """No answer from the scheduler within the timeout, or (NOT_LEADER) a
    scheduler replica that does not lead: the message names the leader."""


class Timeout(TailcutError, TimeoutError):
    """wait() or as_completed() ran past its own timeout; the job goes on."""


class JobFailed(TailcutError):
    """as_completed(): the job ended failed or cancelled. `status` is its
    final JobStatus; the results that did commit were yielded before."""

    def __init__(self, status):
        super().__init__(f"job {status.job_id} {status.state}: {status.reason or 'no reason given'}")
        self.status = status


class Internal(TailcutError):
    """A bug on the scheduler's side (INTERNAL), or a code this client does
    not know."""


# Error.Code name -> exception class.
_BY_CODE = {
    "UNKNOWN_JOB": UnknownJob,
    "NOT_YOUR_JOB": NotYourJob,
    "UNAUTHENTICATED": Refused,
    "UNKNOWN_KERNEL": UnknownKernel,
    "INFEASIBLE": Infeasible,
    "BUSY": Busy,
    "NOT_LEADER": Unavailable,  # a scheduler replica that does not lead; the message names the leader
    "TOO_LARGE": TooLarge,
    "INVALID_ARGUMENT": InvalidArgument,
    "BAD_MESSAGE": InvalidArgument,
    "VERSION_MISMATCH": InvalidArgument,
}


def from_wire(code_name, message):
    """The exception for a wire Error."""
    return _BY_CODE.get(code_name, Internal)(message, code_name)
