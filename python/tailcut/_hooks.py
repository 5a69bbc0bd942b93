"""Registers the joblib backend "tailcut" (joblib_backend.py) as soon as
joblib is imported, before or after tailcut, without importing joblib
(a second or more) for programs that never use it."""

import importlib.abc
import importlib.util
import sys

_TRIGGER = "joblib.parallel"


def _register():
    from . import joblib_backend  # noqa: F401 (registers on import)


class _Loader(importlib.abc.Loader):
    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        _register()


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != _TRIGGER:
            return None
        sys.meta_path.remove(self)  # once; and the lookup below must not find this finder
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def register_joblib_when_imported():
    if _TRIGGER in sys.modules:
        _register()
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
