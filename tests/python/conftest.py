"""Shared fixtures: the package from the source tree (PYTHONPATH=python is
set by ctest; set here too so `pytest tests/python` works by hand), and one
local cluster per key mode for the daemon tests."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

import tailcut  # noqa: E402


def _modes():
    # ctest runs the modes as separate tests (TAILCUT_PY_KEYS); by hand, both.
    mode = os.environ.get("TAILCUT_PY_KEYS", "")
    return {"nokeys": [False], "keys": [True]}.get(mode, [False, True])


@pytest.fixture(scope="module", params=_modes(), ids=lambda keys: "keys" if keys else "nokeys")
def cluster(request):
    with tailcut.LocalCluster(executors=2, slots=2, keys=request.param) as c:
        yield c


@pytest.fixture(scope="module")
def python_cluster():
    """Executors that run Python functions (--allow-python), no keys."""
    with tailcut.LocalCluster(executors=2, slots=2, allow_python=True) as c:
        yield c


@pytest.fixture
def client(cluster):
    with cluster.client() as c:
        yield c


@pytest.fixture
def other(cluster):
    """A client of another owner: another key, or another user name without keys."""
    with (cluster.client("other") if cluster.with_keys else cluster.client(user="someone-else")) as c:
        yield c
