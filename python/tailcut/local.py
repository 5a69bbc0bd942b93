"""A whole tailcut cluster on this machine, for examples and tests: the
tailcut-scheduler daemon (in memory: no journal) and executor daemons as
child processes on free loopback ports, optionally with fresh CURVE keys.

    with tailcut.LocalCluster(executors=2) as cluster:
        with cluster.client() as c:
            c.wait(c.submit(tailcut.fanout("noop", tasks=10)))

The daemons come from `bin_dir`, else $TAILCUT_BIN, else
$TAILCUT_BUILD_DIR/bin, else REPO/build/bin when this package is the source
tree's (what scripts/setup.sh builds), else PATH (an installed tailcut: the
.deb or `cmake --install`).
Logs go to a temporary folder, removed on stop unless `keep_logs` or the
cluster failed to start (the error names the folder).
"""

import ctypes
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from .client import Client
from .errors import TailcutError, Unavailable

# The source tree holding this package, when it is one (not an installed copy).
_SOURCE_ROOT = Path(__file__).resolve().parents[2]

# Keys made for a cluster with keys, as the C++ LocalCluster makes them:
# name -> role. Every key but the scheduler's goes into trusted.toml.
KEY_ROLES = {"scheduler": "admin", "executor": "executor", "client": "client", "other": "client", "admin": "admin"}


def find_bin_dir(bin_dir=None):
    """The folder holding tailcut-scheduler, tailcut-executor and tailcut."""
    candidates = [Path(bin_dir)] if bin_dir else []
    if not bin_dir:
        if os.environ.get("TAILCUT_BIN"):
            candidates.append(Path(os.environ["TAILCUT_BIN"]))
        if os.environ.get("TAILCUT_BUILD_DIR"):
            candidates.append(Path(os.environ["TAILCUT_BUILD_DIR"]) / "bin")
        if (_SOURCE_ROOT / "wire" / "proto" / "tailcut.proto").is_file():
            candidates.append(_SOURCE_ROOT / "build" / "bin")
        on_path = shutil.which("tailcut-scheduler")
        if on_path:
            candidates.append(Path(on_path).resolve().parent)
    for d in candidates:
        if (d / "tailcut-scheduler").is_file() and (d / "tailcut-executor").is_file():
            return d
    raise TailcutError(
        "tailcut-scheduler and tailcut-executor not found in "
        + (", ".join(str(d) for d in candidates) or "PATH")
        + "; build them (scripts/setup.sh), install them (docs/DEPLOY.md) or set TAILCUT_BIN to their folder")


def _try_port(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return None
        return s.getsockname()[1]


def _free_port():
    # A free port below the kernel's ephemeral range, where no outgoing
    # connection (nor a peer's reconnection to itself) can hold it while a
    # restarted scheduler is down: as FreeLoopbackPort in C++
    # (client/src/local_cluster.cpp). It is released before the scheduler
    # binds it, so another process may take it meanwhile: start() retries then.
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    span = min(20000, low - 1024)
    if span >= 4096:
        rng = random.SystemRandom()
        for _ in range(256):
            port = _try_port(low - 1 - rng.randrange(span))
            if port:
                return port
    return _try_port(0)


def _die_with_parent():
    # Daemons must not outlive a test run that is killed (ctest timeout).
    # Linux sends the signal when the spawning *thread* ends, so _spawn asks
    # for it only from the main thread.
    PR_SET_PDEATHSIG = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


class LocalCluster:
    """executors        executor daemons to start
    slots            --slots of each executor
    keys             make fresh keys (scheduler, executor, client, other,
                     admin) and run every daemon with them
    allow_shell      executors also run the `shell` kernel (--allow-shell)
    allow_python     executors also run Python functions (--allow-python),
                     with this interpreter (sys.executable) as `python`
    scheduler_flags  extra tailcut-scheduler flags (e.g. ["--policy", "none"])
    executor_flags   extra tailcut-executor flags
    journal          keep the scheduler's journal (state_dir in the log
                     folder), so restart_scheduler() resumes its jobs;
                     default in memory
    """

    def __init__(self, executors=2, slots=2, keys=False, allow_shell=False, scheduler_flags=(), executor_flags=(),
                 bin_dir=None, keep_logs=False, start_timeout=30.0, journal=False, allow_python=False):
        self.bin_dir = find_bin_dir(bin_dir)
        self.executor_count = executors
        self.slots = slots
        self.with_keys = keys
        self.allow_shell = allow_shell
        self.allow_python = allow_python
        self.scheduler_flags = list(scheduler_flags)
        self.executor_flags = list(executor_flags)
        self.keep_logs = keep_logs
        self.start_timeout = start_timeout
        self.journal = journal
        self.log_dir = None
        self.keys_dir = None
        self.client_endpoint = self.executor_endpoint = None
        self._scheduler = None
        self._executors = []

    # ------------------------------------------------------------- life --
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        """Starts the daemons and returns once every executor registered."""
        self.log_dir = tempfile.mkdtemp(prefix="tailcut-py-")
        try:
            if self.with_keys:
                self._make_keys()
            for attempt in range(3):
                self.executor_endpoint = f"tcp://127.0.0.1:{_free_port()}"
                self.client_endpoint = f"tcp://127.0.0.1:{_free_port()}"
                self._start_scheduler()
                if self._scheduler_up():
                    break
                self._stop_process(self._scheduler)  # its port was taken meanwhile: new ports
            else:
                raise TailcutError(f"tailcut-scheduler did not start; logs in {self.log_dir}:\n"
                                   + self._tail("scheduler.log"))
            for i in range(self.executor_count):
                self._start_executor(i)
            self._wait_for_executors(self.executor_count)
        except BaseException:
            self.keep_logs = True
            self.stop()
            raise
        return self

    def stop(self):
        """Stops the executors, then the scheduler (SIGTERM, then SIGKILL);
        removes the logs unless kept."""
        for p in self._executors:
            self._stop_process(p)
        self._executors = []
        if self._scheduler is not None:
            self._stop_process(self._scheduler)
            self._scheduler = None
        if self.log_dir and os.path.isdir(self.log_dir):
            if self.keep_logs:
                print(f"tailcut local cluster: logs kept in {self.log_dir}")
            else:
                shutil.rmtree(self.log_dir, ignore_errors=True)

    # ---------------------------------------------------------- clients --
    def client_options(self, as_="client"):
        """Client arguments for this cluster, holding key `as_` ("client",
        "other" or "admin") when it has keys."""
        if not self.with_keys:
            return {"scheduler": self.client_endpoint, "key_file": "", "scheduler_key": ""}
        if as_ not in KEY_ROLES or as_ in ("scheduler", "executor"):
            raise TailcutError(f"no client key {as_!r}: use client, other or admin")
        return {"scheduler": self.client_endpoint, "key_file": os.path.join(self.keys_dir, as_ + ".key"),
                "scheduler_key": os.path.join(self.keys_dir, "scheduler.pub")}

    def client(self, as_="client", **options):
        """A Client of this cluster (see client_options)."""
        return Client(**{**self.client_options(as_), **options})

    def add_executor(self, *flags, allow_shell=None, allow_python=None, env=None):
        """Starts one more executor (extra flags after the usual ones; `env`:
        variables added to its environment, which its Python workers
        inherit) and waits for it to register."""
        self._start_executor(len(self._executors), list(flags), allow_shell, allow_python, env)
        self._wait_for_executors(len(self._executors))

    def restart_scheduler(self, kill=False):
        """Stops the scheduler (SIGKILL with `kill`: a crash; else SIGTERM) and
        starts it again on the same ports; returns once it answers. With the
        journal, its jobs go on."""
        if kill:
            self._scheduler.kill()
        self._stop_process(self._scheduler)
        self._start_scheduler()
        if not self._scheduler_up():
            self.keep_logs = True
            raise TailcutError(f"tailcut-scheduler did not start again; logs in {self.log_dir}:\n"
                               + self._tail("scheduler.log"))

    # ---------------------------------------------------------- helpers --
    def _make_keys(self):
        self.keys_dir = os.path.join(self.log_dir, "keys")
        for name, role in KEY_ROLES.items():
            subprocess.run([str(self.bin_dir / "tailcut"), "keygen", name, "--role", role, "--dir", self.keys_dir],
                           check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(self.keys_dir, "trusted.toml"), "w") as out:
            for name in KEY_ROLES:
                if name != "scheduler":
                    out.write(Path(self.keys_dir, name + ".pub").read_text())

    def _spawn(self, argv, log_name, env=None):
        main_thread = threading.current_thread() is threading.main_thread()
        with open(os.path.join(self.log_dir, log_name), "ab") as log:
            return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    env={**os.environ, **env} if env else None,
                                    preexec_fn=_die_with_parent if main_thread else None)

    def _start_scheduler(self):
        argv = [str(self.bin_dir / "tailcut-scheduler"), "--executor-endpoint", self.executor_endpoint,
                "--client-endpoint", self.client_endpoint,
                # A JSON string is a TOML basic string too.
                "--set", "scheduler.state_dir=" + json.dumps(os.path.join(self.log_dir, "state") if self.journal else ""),
                # No /metrics: the daemon's default port (7780) would clash
                # between clusters on one machine (docs/METRICS.md).
                "--http-listen", ""]
        if self.with_keys:
            argv += ["--key-file", os.path.join(self.keys_dir, "scheduler.key"),
                     "--trusted-keys", os.path.join(self.keys_dir, "trusted.toml")]
        self._scheduler = self._spawn(argv + self.scheduler_flags, "scheduler.log")

    def _start_executor(self, index, extra=(), allow_shell=None, allow_python=None, env=None):
        argv = [str(self.bin_dir / "tailcut-executor"), "--scheduler", self.executor_endpoint,
                "--slots", str(self.slots), "--name", f"local-{index + 1}"]
        if self.with_keys:
            argv += ["--key-file", os.path.join(self.keys_dir, "executor.key"),
                     "--scheduler-key", os.path.join(self.keys_dir, "scheduler.pub")]
        runs_code = False
        if self.allow_shell if allow_shell is None else allow_shell:
            argv.append("--allow-shell")
            runs_code = True
        if self.allow_python if allow_python is None else allow_python:
            # The client's own interpreter: pickled functions need its major.minor.
            argv += ["--allow-python", "--set", "python=" + json.dumps(sys.executable)]
            runs_code = True
        if runs_code and not self.with_keys:  # loopback, our own scheduler: nothing to authenticate it with
            argv.append("--trust-unauthenticated-scheduler")
        self._executors.append(self._spawn(argv + self.executor_flags + list(extra), f"executor-{index + 1}.log", env))

    def _scheduler_up(self):
        """True once the scheduler answers; False if it exited first."""
        deadline = time.monotonic() + self.start_timeout
        with self.client("admin" if self.with_keys else "client", timeout=1.0) as c:
            while time.monotonic() < deadline:
                if self._scheduler.poll() is not None:
                    return False
                try:
                    c.executors()
                    return True
                except Unavailable:
                    pass
        raise TailcutError(f"tailcut-scheduler did not answer within {self.start_timeout:g} s; logs in {self.log_dir}")

    def _wait_for_executors(self, n):
        deadline = time.monotonic() + self.start_timeout
        seen = 0
        with self.client("admin" if self.with_keys else "client", timeout=1.0) as c:
            while time.monotonic() < deadline:
                for i, p in enumerate(self._executors):
                    if p.poll() is not None:
                        raise TailcutError(f"executor {i + 1} exited with code {p.returncode}; logs in "
                                           f"{self.log_dir}:\n" + self._tail(f"executor-{i + 1}.log"))
                try:
                    seen = len(c.executors())
                except Unavailable:
                    continue
                if seen >= n:
                    return
                time.sleep(0.02)
        raise TailcutError(f"{seen} of {n} executors registered within {self.start_timeout:g} s; logs in {self.log_dir}")

    def _tail(self, log_name, lines=20):
        try:
            return "\n".join(Path(self.log_dir, log_name).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    @staticmethod
    def _stop_process(p, grace_s=10.0):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(grace_s)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
