"""The byte formats of Python tasks, shared by the client (python/tailcut/
functions.py) and the worker (worker.py); the executor passes them through
untouched (executor/src/python_kernel.cpp). Standard library only: the
worker imports this before anything else.

A value travels as pickle protocol 5 with its out-of-band buffers (numpy
arrays, bytearrays, PickleBuffer) after the pickle stream, so they are
neither copied into the stream nor out of it on loading:

    u32 n_buffers | u64 len of each buffer | u64 len of the stream | stream | buffers

A task (TaskSpec.args of kernel `python`):

    b"TCPY" | u8 format version (1) | u8 kind | u32 len | function part | value (args, kwargs)

kind b"P": the function part is a cloudpickle of the function (the
executor's Python must have the client's major.minor); b"M": it is the
UTF-8 text "module:function" (any Python version).

A result (TaskResult.output):

    b"TCPR" | u8 version (1) | u8 status | u32 len | stdout tail | u32 len | stderr tail | value

status b"O": the value is the function's return value; b"E": it is a dict
with the exception's "type", "message", "traceback" (text) and
"exception" (its pickle, None when it does not pickle).

Upstream results a task takes as input (a Future passed as an argument,
docs/PYTHON.md) travel in its (args, kwargs) as InputRef(i); the executor
sends their committed results (Assignment.inputs, in order) to the worker
in a frame before the task's:

    u32 n | n x (u32 len | result)
"""

import pickle
import struct

TASK_MAGIC = b"TCPY\x01"
RESULT_MAGIC = b"TCPR\x01"
KIND_PICKLED = b"P"
KIND_REFERENCE = b"M"
OK = b"O"
ERROR = b"E"
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


class InputRef:
    """Stands for input i of the task in its pickled arguments; the worker
    puts the upstream task's value in its place."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index

    def __reduce__(self):
        return (InputRef, (self.index,))


def parse_inputs(data):
    """The results of an inputs frame, as memoryviews of `data`."""
    view = memoryview(data)
    (n,) = _U32.unpack_from(view, 0)
    offset, out = 4, []
    for _ in range(n):
        (length,) = _U32.unpack_from(view, offset)
        offset += 4
        out.append(view[offset : offset + length])
        offset += length
    if offset > len(view):
        raise ValueError("truncated inputs frame")
    return out


def dumps_value(obj):
    """`obj` as a pickle-5 value with out-of-band buffers (bytes)."""
    buffers = []
    stream = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    head = [_U32.pack(len(raws))] + [_U64.pack(r.nbytes) for r in raws] + [_U64.pack(len(stream))]
    return b"".join(head + [stream] + raws)


def loads_value(data, offset=0):
    """The object of a value at `offset` of `data` (bytes, bytearray or a
    memoryview). Buffers are views of `data`: writable when it is."""
    view = memoryview(data)
    (n,) = _U32.unpack_from(view, offset)
    offset += 4
    lengths = [_U64.unpack_from(view, offset + 8 * i)[0] for i in range(n)]
    offset += 8 * n
    (stream_len,) = _U64.unpack_from(view, offset)
    offset += 8
    stream = view[offset : offset + stream_len]
    offset += stream_len
    buffers = []
    for length in lengths:
        buffers.append(view[offset : offset + length])
        offset += length
    if offset > len(view):
        raise ValueError("truncated value")
    return pickle.loads(stream, buffers=buffers)


def task_payload(kind, function_part, args_value):
    """A task's argument bytes; `args_value` is dumps_value((args, kwargs))."""
    return b"".join([TASK_MAGIC, kind, _U32.pack(len(function_part)), function_part, args_value])


def parse_task(data):
    """(kind, function part as bytes, offset of the (args, kwargs) value)."""
    view = memoryview(data)
    if bytes(view[:5]) != TASK_MAGIC:
        raise ValueError("not a tailcut Python task (TaskSpec.args of kernel 'python' comes from tailcut.Client)")
    kind = bytes(view[5:6])
    (n,) = _U32.unpack_from(view, 6)
    return kind, bytes(view[10 : 10 + n]), 10 + n


def result_payload(status, stdout, stderr, value):
    out = stdout.encode("utf-8", "replace")
    err = stderr.encode("utf-8", "replace")
    return b"".join([RESULT_MAGIC, status, _U32.pack(len(out)), out, _U32.pack(len(err)), err, value])


def writable_result(data):
    """`data` (a result payload) as parse_result should read it: a value's
    out-of-band buffers (numpy arrays) are views of it, so a bytearray makes
    them writable, at one copy, only when there are any."""
    return bytearray(data) if _has_buffers(data) else data


def _has_buffers(data):
    try:
        view = memoryview(data)
        (n,) = _U32.unpack_from(view, 6)
        offset = 10 + n
        (m,) = _U32.unpack_from(view, offset)
        return _U32.unpack_from(view, offset + 4 + m)[0] > 0
    except Exception:
        return False


def parse_result(data):
    """(status, stdout tail, stderr tail, the value's object)."""
    view = memoryview(data)
    if bytes(view[:5]) != RESULT_MAGIC:
        raise ValueError("not a tailcut Python result")
    status = bytes(view[5:6])
    (n,) = _U32.unpack_from(view, 6)
    stdout = bytes(view[10 : 10 + n]).decode("utf-8", "replace")
    offset = 10 + n
    (m,) = _U32.unpack_from(view, offset)
    stderr = bytes(view[offset + 4 : offset + 4 + m]).decode("utf-8", "replace")
    return status, stdout, stderr, loads_value(data, offset + 4 + m)
