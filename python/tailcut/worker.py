"""The worker loop of the executor's `python` kernel (docs/PYTHON.md,
"Python functions"): `python -m tailcut.worker --fd 3` runs tasks read from
the socket on fd 3, one at a time, until the executor closes it.

Frames are [u32 little-endian length][u8 type][payload], the length
counting type + payload (executor/src/python_kernel.cpp is the other side):
T task, I the next task's inputs, X skip task n (u64) in; H hello, P
progress, R result (its run time in seconds, a f64, then the envelope), C
cancelled (or skipped), E start failure out.

Tasks come in batches (several T frames in one write) and are numbered from
1 in the order they come. Before a function runs, its number goes into the
first u64 of the shared page on --state-fd, so that the executor knows,
should this process die, which tasks started and which it must hand to
another worker; the page's second u64 names the task a SIGINT is for.

A function's exception is a result (status E of the result envelope,
_pickling.py), not a failed attempt: the task ran, and running it again
would raise again. SIGINT interrupts the running function
(KeyboardInterrupt); between tasks it is ignored. The executor kills a
worker that does not stop within a second.
"""

import argparse
import collections
import importlib
import mmap
import os
import signal
import socket
import struct
import sys
import threading
import time
import traceback

from . import _pickling, _task

_HEAD = struct.Struct("<IB")
_TAIL_CHARS = 4096  # of stdout and of stderr, kept per task
_CACHE_LIMIT = 256  # unpickled functions kept, by their pickle

_running = False  # a function runs: SIGINT interrupts it
_interrupted = False  # the executor sent SIGINT during this task
_number = 0  # the task running or last run (T frames count from 1)
_state = None  # the shared page (mmap) of --state-fd
_U64 = struct.Struct("<Q")
_F64 = struct.Struct("<d")


class _Tail:
    """A text stream keeping the last _TAIL_CHARS characters written."""

    def __init__(self):
        self.parts, self.size = [], 0

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self.parts.append(text)
        self.size += len(text)
        if self.size > 2 * _TAIL_CHARS:
            joined = "".join(self.parts)[-_TAIL_CHARS:]
            self.parts, self.size = [joined], len(joined)
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False

    def text(self):
        return "".join(self.parts)[-_TAIL_CHARS:]


def _on_sigint(signum, frame):
    global _interrupted
    if _running and (_state is None or _U64.unpack_from(_state, 8)[0] == _number):
        _interrupted = True
        raise KeyboardInterrupt


class _Channel:
    def __init__(self, fd):
        self.sock = socket.socket(fileno=fd)
        self.lock = threading.Lock()  # the task's threads may report progress
        self.buf = bytearray()  # received, not parsed yet
        self.frames = collections.deque()  # parsed, not served yet
        self.skipped = set()  # numbers of tasks cancelled before they started

    def send(self, kind, payload=b"", prefix=b""):
        head = _HEAD.pack(len(prefix) + len(payload) + 1, kind[0]) + prefix
        with self.lock:
            if len(payload) < 65536:  # one write; a big payload is not copied for it
                self.sock.sendall(head + payload)
            else:
                self.sock.sendall(head)
                self.sock.sendall(payload)

    def _fill(self, block):
        """Reads what the executor sent (waiting for it when `block`) and
        parses it into frames; False at the end of the stream."""
        try:
            data = self.sock.recv(1 << 20, 0 if block else socket.MSG_DONTWAIT)
        except BlockingIOError:
            return True
        if not data:
            return False
        buf = self.buf
        buf += data
        pos, end = 0, len(buf)
        while end - pos >= _HEAD.size:
            length, kind = _HEAD.unpack_from(buf, pos)
            if end - pos - 4 < length:
                break
            body = buf[pos + _HEAD.size : pos + 4 + length]
            pos += 4 + length
            if kind == 0x58:  # X: a queued task was cancelled; skipped when its turn comes
                self.skipped.add(_U64.unpack_from(body)[0])
            else:
                self.frames.append((bytes([kind]), body))
        del buf[:pos]
        return True

    def receive(self):
        """(type, payload as a bytearray), or None when the executor closed."""
        while not self.frames:
            if not self._fill(True):
                return None
        return self.frames.popleft()

    def poll(self):
        """Takes in what came meanwhile (a skip for a task of this batch)."""
        self._fill(False)


def resolve_reference(reference):
    """The object a 'module:function' reference names (imported here)."""
    module, _, name = reference.partition(":")
    if not module or not name:
        raise ValueError(f"a function reference is 'module:function', got {reference!r}")
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _error_value(exc, skip_frames=0):
    tb = exc.__traceback__
    for _ in range(skip_frames):  # the worker's own frame says nothing to the caller
        tb = tb.tb_next if tb is not None and tb.tb_next is not None else tb
    try:
        pickled = _pickling.dumps_value(exc)
        _pickling.loads_value(pickled)  # some pickle but do not unpickle
    except Exception:
        pickled = None
    return {
        "type": f"{type(exc).__module__}.{type(exc).__qualname__}",
        "message": str(exc),
        "traceback": "".join(traceback.format_exception(type(exc), exc, tb)),
        "exception": pickled,
    }


class Worker:
    def __init__(self, channel, max_result_bytes):
        self.channel = channel
        self.max_result_bytes = max_result_bytes
        self.functions = {}
        self.imported = False  # the last cancelled task imported modules

    def function(self, kind, part):
        fn = self.functions.get((kind, part))
        if fn is None:
            if kind == _pickling.KIND_PICKLED:
                import pickle  # cloudpickle's output loads with plain pickle (cloudpickle must be importable)
                fn = pickle.loads(part)
            elif kind == _pickling.KIND_REFERENCE:
                fn = resolve_reference(part.decode("utf-8"))
            else:
                raise ValueError(f"unknown task kind {kind!r}")
            if len(self.functions) >= _CACHE_LIMIT:
                self.functions.clear()
            self.functions[(kind, part)] = fn
        return fn

    def substitute(self, value, inputs):
        """`value` with an InputRef replaced by its upstream task's value."""
        if not isinstance(value, _pickling.InputRef):
            return value
        if not 0 <= value.index < len(inputs):
            raise ValueError(f"input {value.index} of {len(inputs)} was not delivered")
        status, _, _, upstream = _pickling.parse_result(inputs[value.index])
        if status != _pickling.OK:
            raise RuntimeError(f"input {value.index}: the upstream task raised {upstream.get('type')}: "
                               f"{upstream.get('message')}")
        return upstream

    def run(self, payload, inputs=()):
        """One task: the result envelope, or None when SIGINT stopped it."""
        global _running, _interrupted
        _interrupted = False
        out, err = _Tail(), _Tail()
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = out, err
        status, value = _pickling.OK, None
        modules, self.imported = len(sys.modules), False
        try:
            _running = True
            try:
                kind, part, offset = _pickling.parse_task(payload)
                fn = self.function(kind, part)
                args, kwargs = _pickling.loads_value(payload, offset)
                if inputs:
                    args = tuple(self.substitute(a, inputs) for a in args)
                    kwargs = {k: self.substitute(v, inputs) for k, v in kwargs.items()}
                value = fn(*args, **kwargs)
            finally:
                _running = False
        except KeyboardInterrupt as e:
            if _interrupted:
                self.imported = len(sys.modules) != modules
                return None
            status, value = _pickling.ERROR, _error_value(e, 1)  # the function's own
        except BaseException as e:  # SystemExit too: the worker stays
            status, value = _pickling.ERROR, _error_value(e, 1)
        finally:
            sys.stdout, sys.stderr = saved
        try:
            encoded = _pickling.dumps_value(value)
        except Exception as e:
            status, encoded = _pickling.ERROR, _pickling.dumps_value(
                _error_value(TypeError(f"the result does not pickle: {e}")))
        if len(encoded) > self.max_result_bytes:
            status, encoded = _pickling.ERROR, _pickling.dumps_value(_error_value(ValueError(
                f"the result is {len(encoded)} bytes pickled, over this executor's limit of "
                f"{self.max_result_bytes} (half its max_message_bytes, or max_output_bytes): "
                "return less, or write it to storage and return where")))
        return _pickling.result_payload(status, out.text(), err.text(), encoded)

    def serve(self):
        global _number
        inputs = []
        channel = self.channel
        while True:
            frame = channel.receive()
            if frame is None:
                return
            kind, payload = frame
            if kind == b"I":  # the next task's inputs
                inputs = _pickling.parse_inputs(payload)
                continue
            if kind != b"T":
                continue
            _number += 1
            task_inputs, inputs = inputs, []
            if channel.frames:  # mid-batch: a skip may have come since the batch did
                channel.poll()
            if _number in channel.skipped:
                channel.skipped.discard(_number)
                channel.send(b"C")
                continue
            if _state is not None:
                _U64.pack_into(_state, 0, _number)  # started: never handed to another worker
            t0 = time.perf_counter()
            try:
                result = self.run(payload, task_inputs)
            except KeyboardInterrupt:  # SIGINT after the function returned, while encoding
                result = None
            if _interrupted:  # cancelled: whatever it returned is void
                result = None
            if result is None:
                self.channel.send(b"C")
                if self.imported:
                    # Cancelled while it imported (a first task unpickling
                    # scikit-learn, say): a module cut short can stay half
                    # made in sys.modules ("module 'numpy' has no attribute
                    # 'round'" in the next task). The executor replaces a
                    # worker that exits.
                    return
            else:
                self.channel.send(b"R", result, _F64.pack(time.perf_counter() - t0))


def _die_with_parent():
    # The executor's loss must not leave workers running user code.
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main(argv=None):
    global _state
    parser = argparse.ArgumentParser(prog="python -m tailcut.worker")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--state-fd", type=int, default=-1)
    parser.add_argument("--max-result-bytes", type=int, default=16 << 20)
    parser.add_argument("--preload", default="")
    args = parser.parse_args(argv)
    parent = os.getppid()
    _die_with_parent()
    if os.getppid() != parent:
        return 1
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.set_inheritable(args.fd, False)  # not into the task's own child processes
    if args.state_fd >= 0:
        _state = mmap.mmap(args.state_fd, 16)
        os.close(args.state_fd)  # the mapping stays; not into the task's child processes
    channel = _Channel(args.fd)
    try:
        for module in filter(None, args.preload.split(",")):
            importlib.import_module(module.strip())
    except BaseException:
        channel.send(b"E", ("python_preload: " + traceback.format_exc()).encode("utf-8", "replace"))
        return 1
    _task.set_channel(channel.send)
    channel.send(b"H", ("%d.%d" % sys.version_info[:2]).encode())
    signal.signal(signal.SIGINT, _on_sigint)
    Worker(channel, args.max_result_bytes).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
