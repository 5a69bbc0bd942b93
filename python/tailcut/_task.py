"""What a running Python task sees of its worker: `tailcut.progress()`
writes to the worker's channel when the function runs in one, and does
nothing elsewhere (a function tested locally). Standard library only."""

import struct

_channel = None  # set by worker.py: a thread-safe callable sending one frame (type, payload)
_FLOAT = struct.Struct("<f")


def set_channel(send):
    """worker.py: `send(type, payload)`, thread-safe, carries progress to the executor."""
    global _channel
    _channel = send


def progress(fraction):
    """Reports how far the running task is, 0..1 (clamped), to its executor:
    progress-based policies (docs/POLICIES.md) read it. A no-op outside a
    tailcut worker."""
    f = float(fraction)
    f = 0.0 if f != f else min(1.0, max(0.0, f))  # NaN counts as no progress
    send = _channel
    if send is not None:
        send(b"P", _FLOAT.pack(f))
