"""Functions for the python kernel's batch tests (tests/executor/python_batch_test.cpp):
each notes "<i> <pid>" in the file at `path` as it starts, so a test sees
which tasks ran, how often, and on which worker."""

import os
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
