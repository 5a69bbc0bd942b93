"""Functions for the python kernel's batch tests (tests/executor/python_batch_test.cpp):
each notes "<i> <pid>" in the file at `path` as it starts, so a test sees
which tasks ran, how often, and on which worker."""

import os
import socket
import struct
import sys
import threading
import time


def _note(path, i):
    with open(path, "a") as f:
        f.write(f"{i} {os.getpid()}\n")


def record(path, i):
    _note(path, i)
    return i


def crash(path, i):
    _note(path, i)
    os._exit(3)


def sleep(path, i):
    _note(path, i)
    time.sleep(30)
    return i


def sleep_pad(path, i, pad):
    return sleep(path, i)


def record_pad(path, i, pad):
    return record(path, i)


# Workers gone wrong (tests/executor/python_worker_test.cpp): user code
# owns its worker process, fd 3 (the executor's socket) included.


def close_socket(path, i):
    """Closes the executor's socket and lives on."""
    _note(path, i)
    socket.socket(fileno=os.dup(3)).shutdown(socket.SHUT_RDWR)
    time.sleep(30)


def oversized_frame(path, i):
    """Claims a frame of 4 GiB, then lives on."""
    _note(path, i)
    socket.socket(fileno=os.dup(3)).sendall(struct.pack("<IB", 0xFFFFFFF0, ord("P")))
    time.sleep(30)


def flood(path, i, mib=16):
    """Returns, leaving a thread that sends `mib` MiB of progress frames."""
    _note(path, i)

    def send():
        time.sleep(0.3)  # after this task's answer: frames never interleave
        out = socket.socket(fileno=os.dup(3))
        chunk = struct.pack("<IBf", 5, ord("P"), 0.5) * (1 << 16)
        for _ in range((mib << 20) // len(chunk)):
            out.sendall(chunk)

    threading.Thread(target=send, daemon=True).start()
    return i


def exit_on_next_read(path, i):
    """Returns; its worker exits as soon as it reads the next task."""
    _note(path, i)
    worker = sys.modules["__main__"]  # python -m tailcut.worker
    receive = worker._Channel.receive

    def exit_after(self):
        receive(self)
        os._exit(4)

    worker._Channel.receive = exit_after
    return i
