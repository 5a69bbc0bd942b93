"""The Python client: submit jobs to a tailcut scheduler, follow them, read
their results. It speaks the protocol of docs/PROTOCOL.md exactly as the C++
client does (client/src/client.cpp): one DEALER socket, one protobuf message
per frame, request ids echoed in replies, every request resent each second
until answered (all requests are safe to repeat; submits carry a request
key), pushed results and final statuses matched by the id of the request
that subscribed.

    with tailcut.Client() as c:
        job = c.submit(tailcut.fanout("sleep", "ms=20", tasks=100))
        for r in c.as_completed(job):
            print(r.task_index, r.output)

Not thread-safe: use one Client per thread.
"""

import os
import pwd
import secrets
import time
from collections import deque

import zmq
from zmq.utils.monitor import recv_monitor_message

from . import errors
from .errors import InvalidArgument, Refused, TailcutError, Timeout, TooLarge, Unavailable
from .jobs import Job
from . import functions as _fns
from .keys import load_key_pair, load_public_key
from ._endpoints import Endpoints
from ._proto import pb
from ._zmtp import greeting_mechanism
# The reply records live in records.py; imported here so tailcut.client.JobStatus
# and the others still resolve.
from .records import TERMINAL, ExecutorInfo, JobStatus, JobTrace, TaskResult, TraceAttempt, state_name

DEFAULT_SCHEDULER = "tcp://127.0.0.1:7701"
PROTOCOL_VERSION = pb.PROTOCOL_VERSION_CURRENT
_RESEND_S = 1.0  # as the C++ client: a restarted scheduler lost the first copy
_HANDSHAKE_EVENTS = (
    zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
    | zmq.EVENT_HANDSHAKE_SUCCEEDED
)
_MECHANISM_MISMATCH = 0x11000002  # ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH
_CLOSED_STREAK = 3  # as HandshakeMonitor::kClosedStreak (C++)


def new_request_key():
    """A random idempotency key (128 bits, hex), as the C++ client makes."""
    return secrets.token_hex(16)


def login_name():
    """Who owns jobs on a scheduler without keys (ClientRequest.user)."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return f"uid{os.geteuid()}"


def _is_seconds(value):
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value >= 0


def _job_id(job):
    if isinstance(job, bool) or not isinstance(job, int) or not 0 < job < 2**64:
        raise InvalidArgument(f"a job id is a positive integer (what submit() returned), got {job!r}")
    return job


class Client:
    """A connection to a scheduler's client endpoint.

    scheduler      the endpoint; None: $TAILCUT_SCHEDULER, else tcp://127.0.0.1:7701.
                   Replicas: a comma-separated list; requests follow NOT_LEADER
                   to the leader and move on from one silent for 2 s
    key_file       this client's .key file (tailcut keygen); None: $TAILCUT_KEY_FILE
    scheduler_key  the scheduler's public key, its .pub file or Z85 text;
                   None: $TAILCUT_SCHEDULER_KEY. Both keys or neither ("" = none).
    timeout        seconds to wait for each answer before Unavailable
    user           owner of the jobs on a scheduler without keys (default: the
                   login name, as the C++ client)
    """

    def __init__(self, scheduler=None, key_file=None, scheduler_key=None, timeout=10.0, user=None,
                 max_message_bytes=64 << 20):
        self._sock = self._monitor = self._ctx = None
        self.endpoints = Endpoints(
            scheduler if scheduler is not None else os.environ.get("TAILCUT_SCHEDULER") or DEFAULT_SCHEDULER)
        if key_file is None:
            key_file = os.environ.get("TAILCUT_KEY_FILE", "")
        if scheduler_key is None:
            scheduler_key = os.environ.get("TAILCUT_SCHEDULER_KEY", "")
        if bool(key_file) != bool(scheduler_key):
            raise InvalidArgument(
                "keys: set both key_file (this client's .key) and scheduler_key (the scheduler's .pub), or neither")
        if not _is_seconds(timeout) or timeout == 0:
            raise InvalidArgument(f"timeout must be a number of seconds > 0, got {timeout!r}")
        self.timeout = float(timeout)
        self.user = user if user is not None else login_name()
        self._max_message_bytes = int(max_message_bytes)
        own = load_key_pair(key_file) if key_file else None
        server_key = load_public_key(scheduler_key) if scheduler_key else None

        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.DEALER)
        self._sock.linger = 0
        self._sock.sndhwm = 0
        self._sock.rcvhwm = 0
        # A larger frame from the scheduler drops the connection (it sends
        # TOO_LARGE instead of a reply over its own limit).
        self._sock.maxmsgsize = self._max_message_bytes
        if own:
            self._sock.curve_serverkey = server_key.encode("ascii")
            self._sock.curve_publickey = own.public.encode("ascii")
            self._sock.curve_secretkey = own.secret.encode("ascii")
        self._with_keys = own is not None
        self._closed_in_a_row = 0  # handshakes closed before they finished, none finished since
        # Handshake failures (key refused, keys missing) come only as socket
        # events; without watching them a refused client would just time out.
        self._monitor = self._sock.get_monitor_socket(_HANDSHAKE_EVENTS)
        try:
            self._sock.connect(self.endpoint)
        except zmq.ZMQError as e:
            self.close()
            raise InvalidArgument(f"cannot connect to {self.endpoint}: {e}") from None
        self._next_request = 0
        self._pushed = deque()  # pushed results/statuses not yet read
        self._subscriptions = {}  # request id -> job id whose pushes are kept
        self._submitted_keys = {}  # job id -> request key of each job submitted here
        self._functions = _fns.FunctionTasks(self)  # Python tasks: pending submits, open futures
        self._wake_fd = None  # set_wake

    @property
    def endpoint(self):
        """The scheduler endpoint this client talks to now (of its list)."""
        return self.endpoints.now

    @property
    def functions(self):
        """This client's side of Python tasks (functions.FunctionTasks): what
        tailcut.Executor drives from its thread (make, send_now, watch_done, pump)."""
        return self._functions

    def set_wake(self, fd):
        """Makes a wait for the scheduler's replies return early when `fd`
        (a non-blocking pipe's read end) becomes readable."""
        self._wake_fd = fd
        self._poller = zmq.Poller()
        self._poller.register(self._sock, zmq.POLLIN)
        self._poller.register(fd, zmq.POLLIN)

    # ------------------------------------------------------------- life --
    def close(self):
        """Closes the connection (also on leaving a `with` block), after
        sending what submit() still holds."""
        functions = getattr(self, "_functions", None)
        if functions is not None and functions.pending and self._sock is not None:
            try:
                functions.flush()
            except TailcutError:
                pass
        if self._monitor is not None:
            try:
                self._sock.disable_monitor()
            except zmq.ZMQError:
                pass
            self._monitor.close(linger=0)
            self._monitor = None
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None
        if self._ctx is not None:
            self._ctx.term()
            self._ctx = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    # -------------------------------------------------------------- API --
    def submit(self, job, *args, idempotent=None, **kwargs):
        """Submits a Job (fanout(), k_of_n(), quorum(), or Job(tasks=[...]));
        returns its id. A protobuf JobSpec is accepted as is. Resends never
        create a second job: the submit carries a request key.

        With a function (or a "module:function" string) instead, runs
        fn(*args, **kwargs) on an executor's Python worker and returns a
        Future; submits are held and sent together, as one job, when you
        next wait on a future (or at functions.BATCH_TASKS, or flush()).
        `idempotent=True` lets the scheduler copy a slow attempt
        (docs/PYTHON.md, "Python functions")."""
        if callable(job) or isinstance(job, str):
            self._check_open()
            return self._functions.submit(job, args, kwargs, {"idempotent": idempotent})
        if args or kwargs or idempotent is not None:
            raise InvalidArgument("submit(job) takes no more arguments; submit(fn, *args, **kwargs) takes a function")
        if isinstance(job, Job):
            spec = job.to_wire()
        elif isinstance(job, pb.JobSpec):
            spec = job
        else:
            raise InvalidArgument(f"submit() takes a tailcut.Job (e.g. tailcut.fanout(...)), got {type(job).__name__}")
        req = pb.ClientRequest()
        req.submit.job.CopyFrom(spec)
        return self.submit_request(req)

    def submit_request(self, req):
        """Sends a ClientRequest holding a SubmitJob (built in place: a big
        job is not copied again); returns the job id."""
        spec = req.submit.job
        if not spec.request_key:
            spec.request_key = new_request_key()
        reply = self.call(req)
        job_id = reply.submitted.job_id
        self._submitted_keys[job_id] = spec.request_key
        if spec.stream_results:  # results are pushed under the submit's id
            self._subscriptions[reply.request_id] = job_id
        return job_id

    def map(self, fn, *iterables, idempotent=None):
        """fn(*items) for the items of the iterables taken together (as the
        built-in map), as one job sent at once: a list of Futures in order.
        Raises the scheduler's refusal (e.g. no executor runs Python) here."""
        if not iterables:
            raise InvalidArgument("map(fn, iterable, ...) needs at least one iterable")
        self._check_open()
        return self._functions.map(fn, iterables, {"idempotent": idempotent})

    def gather(self, futures, timeout=None, progress=None):
        """The futures' results, in order (raises the first exception);
        `progress`: a progress bar (None: only when interactive)."""
        return _fns.gather(futures, timeout, progress)

    def flush(self):
        """Sends the Python tasks submit() holds (refusals go to their futures)."""
        self._check_open()
        self._functions.flush()

    def status(self, job):
        """The job's current JobStatus."""
        req = pb.ClientRequest()
        req.status.job_id = _job_id(job)
        return self.checked_status(job, self.call(req).status)

    def cancel(self, job):
        """Cancels the job; returns its JobStatus after cancelling (a job that
        had already ended keeps its final state)."""
        req = pb.ClientRequest()
        req.cancel.job_id = _job_id(job)
        return self.checked_status(job, self.call(req).status)

    def executors(self):
        """The registered executors, as a list of ExecutorInfo."""
        out, after = [], 0
        while True:  # page by page (ListExecutors in tailcut.proto)
            req = pb.ClientRequest()
            req.list_executors.after_id = after
            page = self.call(req).executors
            out += [ExecutorInfo.from_wire(e) for e in page.executors]
            after = page.next_after_id
            if not after:
                return out

    def results(self, job):
        """Every committed result so far, by task index (the job must keep its
        outputs: Job.return_outputs, on by default here)."""
        req = pb.ClientRequest()
        req.results.job_id = _job_id(job)
        out = [TaskResult.from_wire(r) for r in self.call(req).results.results]
        return sorted(out, key=lambda r: r.task_index)

    def trace(self, job):
        """The job's committed attempts as a JobTrace (`tailcut trace JOB`)."""
        req = pb.ClientRequest()
        req.trace.job_id = _job_id(job)
        return JobTrace.from_wire(self.call(req).trace)

    def wait(self, job, timeout=None, poll_interval=0.2, reconnect_timeout=60.0):
        """Blocks until the job ends and returns its final JobStatus (check
        `.succeeded`; a failed job is not an exception here). Raises Timeout
        after `timeout` seconds (None: no limit); the job goes on. While the
        scheduler does not answer (it may be restarting; with its journal the
        job goes on) it keeps asking for `reconnect_timeout` seconds."""
        follow = self._follow(job, timeout, poll_interval, reconnect_timeout)
        while True:
            try:
                next(follow)
            except StopIteration as done:
                return done.value

    def as_completed(self, job, timeout=None, poll_interval=0.2, reconnect_timeout=60.0):
        """Given Futures (of Python tasks): yields each as it finishes.

        Given a job id: yields each task's TaskResult as it commits, in commit order, each
        task once. Works on any job of this owner: results pushed from the
        submit (Job.stream_results) or from a watch it starts, and those
        committed before it began watching fetched from results() at the end
        (they need Job.return_outputs). Raises JobFailed, after yielding what
        committed, when the job ends failed or cancelled; Timeout as wait()."""
        if not isinstance(job, int) or isinstance(job, bool):
            return _fns.as_completed(job, timeout)
        return self._as_completed_job(job, timeout, poll_interval, reconnect_timeout)

    def _as_completed_job(self, job, timeout, poll_interval, reconnect_timeout):
        job = _job_id(job)
        seen = set()
        follow = self._follow(job, timeout, poll_interval, reconnect_timeout)
        while True:
            try:
                r = next(follow)
            except StopIteration as done:
                final = done.value
                break
            if r.task_index not in seen:
                seen.add(r.task_index)
                yield TaskResult.from_wire(r)
        if final.committed > len(seen):
            try:
                missed = [r for r in self.results(job) if r.task_index not in seen]
            except TailcutError as e:
                raise type(e)(
                    f"job {job}: {final.committed - len(seen)} results committed before as_completed() "
                    f"started watching, and the scheduler does not return them ({e.message}); submit with "
                    "return_outputs=True or stream_results=True", e.code) from None
            for r in missed:
                seen.add(r.task_index)
                yield r
        if not final.succeeded:
            raise errors.JobFailed(final)

    # -------------------------------------------------------- protocol --
    def _check_open(self):
        if self._sock is None:
            raise InvalidArgument("this Client is closed")

    def call(self, req):
        """Sends `req` (a ClientRequest, docs/PROTOCOL.md), returns the reply
        with its request id (or raises the scheduler's error). Pushed
        messages arriving meanwhile are kept (take_pushed)."""
        self._check_open()
        self._next_request += 1
        req.version = PROTOCOL_VERSION
        req.request_id = self._next_request
        req.user = self.user
        frame = req.SerializeToString()
        if len(frame) > self._max_message_bytes:  # the scheduler would drop the connection, not answer
            raise TooLarge(f"request of {len(frame)} bytes exceeds max_message_bytes = {self._max_message_bytes} "
                           "(the scheduler's limit)")
        now = time.monotonic()
        deadline, resend = now + self.timeout, now + _RESEND_S
        self._sock.send(frame)
        trouble = None  # handshakes that keep failing for no definite reason: said on timeout
        unanswered = 0  # resends so far
        while True:
            trouble = self._check_handshake() or trouble
            now = time.monotonic()
            if now >= deadline:
                raise Unavailable(f"no answer from the scheduler at {self.endpoint} within {self.timeout:g} s"
                                  + (f": {trouble}" if trouble else " (is tailcut-scheduler running there?)"))
            if now >= resend:
                unanswered += 1
                if len(self.endpoints.all) > 1 and unanswered % 2 == 0:  # replicas: silent 2 s, the next
                    self.endpoints.move(self._sock, self.endpoints.after())
                self._sock.send(frame)
                resend = now + _RESEND_S
            reply = self._receive(min(deadline, resend) - now)
            if reply is None:
                continue
            if reply.request_id == req.request_id:
                if reply.HasField("error") and reply.error.code == pb.Error.NOT_LEADER:
                    # To the leader it names when listed; none known yet (an
                    # election): the next resend; one not listed: the error.
                    trouble, leader = reply.error.message, self.endpoints.leader(reply.error.leader_endpoint)
                    if leader is not None:
                        self.endpoints.move(self._sock, leader)
                        self._sock.send(frame)
                        resend = now + _RESEND_S
                    if leader is not None or not reply.error.leader_endpoint:
                        continue
                if reply.HasField("error"):
                    raise errors.from_wire(pb.Error.Code.Name(reply.error.code), reply.error.message)
                return reply
            self._keep(reply)

    def _receive(self, seconds):
        """One reply within `seconds`, or None (timeout, a frame that does
        not parse, or a byte on the wake pipe: tailcut.Executor's thread
        waits here and is woken by a submit)."""
        ms = max(0, int(seconds * 1000)) + 1
        if self._wake_fd is None:
            if not self._sock.poll(ms, zmq.POLLIN):
                return None
        else:
            ready = dict(self._poller.poll(ms))
            if self._wake_fd in ready:
                try:
                    os.read(self._wake_fd, 4096)
                except BlockingIOError:
                    pass
                return None
            if self._sock not in ready:
                return None
        try:
            frame = self._sock.recv(zmq.NOBLOCK)
        except zmq.Again:
            return None
        reply = pb.ClientReply()
        try:
            reply.ParseFromString(frame)
        except Exception:  # protobuf's DecodeError; garbage is dropped, as in C++
            return None
        return reply

    def receive_pushes(self, seconds):
        """Waits up to `seconds` for a message from the scheduler and keeps
        it when it is a push (take_pushed); returns early on the wake fd."""
        reply = self._receive(seconds)
        if reply is not None:
            self._keep(reply)

    def watch_job(self, job):
        """Asks the scheduler to push the job's results and final status
        here (kept for take_pushed); returns the reply (its status)."""
        req = pb.ClientRequest()
        req.watch.job_id = job
        reply = self.call(req)
        self._subscriptions[reply.request_id] = job
        return reply

    def _keep(self, reply):
        # Only pushes for a live subscription; late duplicates of answered
        # (resent) requests are dropped.
        if reply.request_id in self._subscriptions and (reply.HasField("results") or reply.HasField("status")):
            self._pushed.append(reply)

    def _mismatch(self, where):
        return (f"the scheduler at {where} does not use keys: unset key_file= and scheduler_key= "
                "(and TAILCUT_KEY_FILE, TAILCUT_SCHEDULER_KEY), or give it keys" if self._with_keys else
                f"the scheduler at {where} wants keys: pass key_file= and scheduler_key= "
                "(or set TAILCUT_KEY_FILE and TAILCUT_SCHEDULER_KEY; docs/SECURITY.md)")

    def _check_handshake(self):
        """Raises Refused when a handshake failure is definitive (the key
        refused, or the other mechanism); returns what repeated closed
        handshakes may mean, or None (as HandshakeMonitor in C++)."""
        refused = trouble = None
        while self._monitor.poll(0):
            event = recv_monitor_message(self._monitor, zmq.NOBLOCK)
            where = event.get("endpoint", b"")
            where = where.decode() if isinstance(where, bytes) else str(where)
            kind, value = event["event"], event.get("value", 0)
            if kind == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self._closed_in_a_row = 0
            elif kind == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
                refused = f"the scheduler at {where} refused this key (not in its trusted_keys, or the wrong role)"
            elif kind == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL and value == _MECHANISM_MISMATCH:
                refused = self._mismatch(where)
            elif kind == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL and self._with_keys:
                refused = f"the handshake with {where} failed: it does not hold the scheduler key configured here"
            else:
                self._closed_in_a_row += 1
                # Closed before its greeting was read: ask it which mechanism it speaks.
                if self._closed_in_a_row == _CLOSED_STREAK:
                    if greeting_mechanism(self.endpoint) == (b"NULL" if self._with_keys else b"CURVE"):
                        refused = self._mismatch(where)
                        continue
                if self._closed_in_a_row >= _CLOSED_STREAK:
                    trouble = (f"the handshake with {where} failed {self._closed_in_a_row} times in a row, the "
                               "connection closed before it finished: "
                               + ("it does not hold the scheduler key configured here, or it " if self._with_keys
                                  else "the scheduler ")
                               + "is restarting, turning strangers away, or out of descriptors"
                               + ("" if self._with_keys else " (if it uses keys, a later try says so: one with keys "
                                  "often closes a keyless connection before its greeting names them)"))
        if refused:
            raise Refused(refused)
        return trouble

    def checked_status(self, job, wire_status):
        """The status, checked to be the job this client submitted under that
        id (a scheduler restarted without its journal reuses ids)."""
        key = self._submitted_keys.get(job)
        if key is not None and wire_status.request_key != key:
            raise errors.UnknownJob(
                f"job {job} was lost: the scheduler restarted without its journal and that id is now another job")
        return JobStatus.from_wire(wire_status)

    def take_pushed(self, job):
        """Removes and returns the kept pushes for `job`, in arrival order."""
        mine, rest = [], deque()
        for r in self._pushed:
            (mine if (r.results.job_id if r.HasField("results") else r.status.job_id) == job else rest).append(r)
        self._pushed = rest
        return mine

    def unsubscribe(self, job, request_ids=None):
        """Ends the pushes for `job` kept from its submit and watches (only
        those of `request_ids` when given; with None its kept pushes go too)."""
        for rid in [rid for rid, j in self._subscriptions.items() if j == job]:
            if request_ids is None or rid in request_ids:
                del self._subscriptions[rid]
        if request_ids is None:
            self.take_pushed(job)

    def _follow(self, job, timeout, poll_interval, reconnect_timeout):
        """Generator: yields the job's pushed wire TaskResults, returns its
        final JobStatus. Mirrors the C++ Client::Wait: watch, take pushes,
        poll the status every poll_interval, and keep asking an unanswering
        scheduler for reconnect_timeout."""
        job = _job_id(job)
        if timeout is not None and not _is_seconds(timeout):
            raise InvalidArgument(f"timeout must be None or a number of seconds >= 0, got {timeout!r}")
        if not _is_seconds(poll_interval) or poll_interval == 0:
            raise InvalidArgument(f"poll_interval must be a number of seconds > 0, got {poll_interval!r}")
        if not _is_seconds(reconnect_timeout):
            raise InvalidArgument(f"reconnect_timeout must be a number of seconds >= 0, got {reconnect_timeout!r}")
        first = self.watch_job(job)
        watch_id = first.request_id
        last = self.checked_status(job, first.status)
        pushed_final = False  # the scheduler pushed the final status to us

        def take_pushed():
            nonlocal last, pushed_final
            for r in self.take_pushed(job):
                if r.HasField("results"):
                    yield from r.results.results
                elif r.request_id == watch_id or state_name(r.status.state) in TERMINAL:
                    pushed = JobStatus.from_wire(r.status)
                    if pushed.done or not last.done:  # a late copy of the watch's reply changes nothing
                        last = pushed
                    pushed_final = pushed_final or pushed.done

        finished = False
        try:
            start = time.monotonic()
            next_poll = start + poll_interval
            unanswered_since = None
            while not last.done:
                yield from take_pushed()
                if last.done:
                    break
                now = time.monotonic()
                if timeout is not None and now - start > timeout:
                    raise Timeout(f"job {job} still running after {timeout:g} s")
                self._check_open()
                if now < next_poll:
                    self.receive_pushes(next_poll - now)
                    continue
                st = pb.ClientRequest()
                st.status.job_id = job
                try:
                    polled = self.call(st)
                except Unavailable:
                    # The final status may have been pushed while the poll
                    # went unanswered (the scheduler stopped right after).
                    yield from take_pushed()
                    if last.done:
                        break
                    # The scheduler may be restarting: keep asking, a while.
                    now = time.monotonic()
                    if unanswered_since is None:
                        unanswered_since = now - self.timeout
                    if now - unanswered_since > reconnect_timeout:
                        raise
                    next_poll = now + poll_interval
                    continue
                unanswered_since = None
                last = self.checked_status(job, polled.status)
                next_poll = time.monotonic() + poll_interval
            # A poll can see the end before this turn's pushes leave the
            # scheduler (it answers requests before it sends the turn's
            # results); they follow at once, before the final status push.
            grace = time.monotonic() + _RESEND_S
            while first.status.state == pb.JOB_RUNNING and not pushed_final and time.monotonic() < grace:
                self.receive_pushes(grace - time.monotonic())
                yield from take_pushed()
            # Results pushed before the final status are queued: ZeroMQ keeps
            # the order (a job that ended before the watch never looped).
            yield from take_pushed()
            finished = True
            return last
        finally:
            # A finished job pushes nothing more; an unfinished one keeps its
            # submit stream for a later call, but this watch ends here.
            self.unsubscribe(job, None if finished else {watch_id})
