"""What the client needs beyond the standard library, checked first on
`import tailcut`: a missing or too old one gives one line that says what
to install (for Debian's python3 and for pip), not a traceback from inside
the generated protocol module. Keep in step with pyproject.toml."""

import importlib
import sys

MIN_PYTHON = (3, 11)  # tomllib (keys.py)
# import name, Debian package, pip requirement, minimum version
REQUIRED = (
    ("zmq", "python3-zmq", "pyzmq", (24, 0)),
    # protoc 3.21's output needs the 4.21 runtime (same release) or newer.
    ("google.protobuf", "python3-protobuf", "protobuf", (4, 21)),
)


def _version(text):
    parts = []
    for p in text.split(".")[:2]:
        digits = "".join(c for c in p if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def check():
    """Raises ImportError with a one-line message when something is missing."""
    if sys.version_info[:2] < MIN_PYTHON:
        raise ImportError(f"tailcut needs Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer; "
                          f"{sys.executable} is {sys.version.split()[0]}")
    missing = []
    for name, apt, pip, minimum in REQUIRED:
        try:
            module = importlib.import_module(name)
        except ImportError:
            missing.append((name, apt, pip, minimum))
            continue
        if _version(getattr(module, "__version__", "0")) < minimum:
            missing.append((f"{name} {module.__version__} (too old)", apt, pip, minimum))
    if missing:
        need = ", ".join(m[0] for m in missing)
        apt = " ".join(m[1] for m in missing)
        pip = " ".join(f"'{m[2]}>={m[3][0]}.{m[3][1]}'" for m in missing)
        raise ImportError(f"tailcut needs {need} in {sys.executable}: for Debian's /usr/bin/python3 "
                          f"`apt-get install {apt}`; for a venv, conda or pyenv Python `pip install {pip}` "
                          f"(or `pip install ./python`, which pulls them in)")
