"""Progress bars for map and gather (docs/PYTHON.md, "Progress"): tqdm's
when it is installed (tqdm.auto: a widget in Jupyter), else one plain line
on stderr rewritten in place. Off by default unless interactive: stderr a
terminal, or a Jupyter kernel. Standard library only (tqdm is optional)."""

import os
import sys
import threading
import time

_PLAIN_EVERY_S = 0.1  # the plain line is rewritten at most this often


def interactive():
    """A person is watching: stderr is a terminal, or this is a Jupyter kernel."""
    if "ipykernel" in sys.modules:
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def wanted(progress):
    """progress=None: $TAILCUT_PROGRESS (0/1) if set, else interactive()."""
    if progress is not None:
        if not isinstance(progress, bool):
            raise TypeError(f"progress must be True, False or None, got {progress!r}")
        return progress
    env = os.environ.get("TAILCUT_PROGRESS", "")
    if env in ("0", "1"):
        return env == "1"
    return interactive()


class _Plain:
    def __init__(self, total, unit, stream):
        self.total, self.unit, self.stream = total, unit, stream
        self.n, self.last, self.closed = 0, 0.0, False
        self.start = time.monotonic()

    def update(self, n=1):
        self.n += n
        now = time.monotonic()
        if now - self.last >= _PLAIN_EVERY_S or self.n >= self.total:
            self.last = now
            self._write()

    def _write(self, end=""):
        rate = self.n / max(time.monotonic() - self.start, 1e-9)
        self.stream.write(f"\rtailcut: {self.n}/{self.total} {self.unit} ({rate:,.0f}/s){end}")
        self.stream.flush()

    def close(self):
        if not self.closed:
            self.closed = True
            self._write("\n")


class Bar:
    """A thread-safe progress bar of `total` steps (update from any thread)."""

    def __init__(self, total, unit="tasks", stream=None):
        self.lock = threading.Lock()
        stream = stream if stream is not None else sys.stderr
        try:
            from tqdm.auto import tqdm
        except ImportError:
            self.bar = _Plain(total, unit, stream)
        else:
            self.bar = tqdm(total=total, unit=unit[:-1] if unit.endswith("s") else unit, file=stream)

    def update(self, n=1):
        with self.lock:
            self.bar.update(n)

    def close(self):
        with self.lock:
            self.bar.close()


def for_futures(futures, progress, unit):
    """A Bar advanced as each concurrent future finishes, or None when not
    wanted; the caller closes it."""
    if not wanted(progress) or not futures:
        return None
    bar = Bar(len(futures), unit)
    for f in futures:
        f.add_done_callback(lambda _: bar.update(1))
    return bar
