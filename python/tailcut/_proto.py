"""Loads the protocol module generated from wire/proto/tailcut.proto.

The module is made at build time (python/CMakeLists.txt runs protoc into
BUILD/python/tailcut_pb2.py), never written by hand or committed, so the
Python client always speaks the same protocol as the daemons it was built
with. Where it is looked for, first hit wins:

  1. $TAILCUT_BUILD_DIR/python/tailcut_pb2.py  (another build folder)
  2. REPO/build/python/tailcut_pb2.py           (what scripts/setup.sh builds)
"""

import importlib.util
import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
_MODULE_NAME = "tailcut._tailcut_pb2"


def build_dirs():
    """Build folders to look in, in order."""
    dirs = []
    if os.environ.get("TAILCUT_BUILD_DIR"):
        dirs.append(Path(os.environ["TAILCUT_BUILD_DIR"]))
    dirs.append(REPO_ROOT / "build")
    return dirs


def _load():
    if _MODULE_NAME in sys.modules:
        return sys.modules[_MODULE_NAME]
    tried = [d / "python" / "tailcut_pb2.py" for d in build_dirs()]
    for path in tried:
        if path.is_file():
            spec = importlib.util.spec_from_file_location(_MODULE_NAME, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[_MODULE_NAME] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[_MODULE_NAME]
                raise
            return module
    raise ImportError(
        "tailcut: the protocol module tailcut_pb2.py is generated at build time and was not found ("
        + ", ".join(str(p) for p in tried)
        + "); run scripts/setup.sh (or cmake --build build --target tailcut_python_proto), "
        "or point TAILCUT_BUILD_DIR at your build folder"
    )


pb = _load()
