"""No module of python/tailcut touches another module's or object's private
names (issue 40): each module offers the others a public surface (the
Client's `functions`, `call`, `take_pushed`...; a Future's `set_result`,
`mark_sent`...; the Executor's `submit_task`), and a name starting with one
underscore is used only through `self` or `cls`.

Flagged, by reading each module's syntax tree:
  - `X._name` where X is not `self` or `cls` (dunders are public);
  - `from M import _name`;
  - getattr/setattr/hasattr/delattr(X, "_name") where X is not self/cls.
Not flagged: importing a package-internal module whose file name starts
with an underscore (`from . import _pickling`): the underscore says it is
not part of the documented API, and its functions are public within the
package. The generated tailcut_pb2.py is left out.

Outside the rule, by name in ALLOWED with the reason:
  - third-party joblib's documented backend base classes
    (ParallelBackendBase, AutoBatchingMixin: joblib_backend.py imports them
    from joblib._parallel_backends, the module that defines them): a module
    path, not a private name, so never flagged;
  - threading._register_atexit (executor.py), as concurrent.futures.thread
    uses it: atexit.register would run after the user's own atexit
    handlers, so a submit from one of those would no longer be refused
    (CPython's test_submit_after_interpreter_shutdown).

Run: python3 tests/python/test_private_names.py [PACKAGE_DIR] (ctest
python_private_names); it checks itself first on a package with known
violations, then the real one, and exits 1 on any violation.
"""

import ast
import pathlib
import sys
import tempfile

SKIP_FILES = {"tailcut_pb2.py"}
OWN = {"self", "cls"}
ALLOWED = {("executor.py", "threading._register_atexit")}
_ATTR_FUNCS = {"getattr", "setattr", "hasattr", "delattr"}


def _private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _owner_is_own(node):
    return isinstance(node, ast.Name) and node.id in OWN


def violations(package_dir):
    """["file:line: what"] for every use of another's private name."""
    found = []
    for path in sorted(pathlib.Path(package_dir).glob("*.py")):
        if path.name in SKIP_FILES:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            what = None
            if isinstance(node, ast.Attribute) and _private(node.attr) and not _owner_is_own(node.value):
                what = f"{ast.unparse(node.value)}.{node.attr}"
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if _private(alias.name) and node.module is not None:
                        found.append(f"{path.name}:{node.lineno}: imports {alias.name} from {node.module}")
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ATTR_FUNCS
                  and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                  and isinstance(node.args[1].value, str) and _private(node.args[1].value)
                  and not _owner_is_own(node.args[0])):
                what = f"{node.func.id}({ast.unparse(node.args[0])}, {node.args[1].value!r})"
            if what is not None and (path.name, what) not in ALLOWED:
                found.append(f"{path.name}:{node.lineno}: {what}")
    return found


_BAD = {
    "a.py": "from .b import _helper, public\nx = public()\nx._state = 1\nprint(getattr(x, '_value'))\n",
    "b.py": "import threading\nclass B:\n    def f(self):\n        return self._own, type(self)._x\n"
            "threading._register_atexit(print)\n",
    "executor.py": "import threading\nthreading._register_atexit(print)\nfrom . import _pickling\n"
                   "class E:\n    @classmethod\n    def g(cls):\n        return cls._y, self.__dict__\n",
    "tailcut_pb2.py": "x._anything = 1\n",
}


def self_test():
    """The checker finds the planted violations and nothing else."""
    with tempfile.TemporaryDirectory() as d:
        for name, text in _BAD.items():
            pathlib.Path(d, name).write_text(text)
        got = violations(d)
    want = [
        "a.py:1: imports _helper from b",
        "a.py:3: x._state",
        "a.py:4: getattr(x, '_value')",
        "b.py:4: type(self)._x",
        "b.py:5: threading._register_atexit",
    ]
    if sorted(got) != sorted(want):
        sys.exit("self-test failed: the checker found\n  " + "\n  ".join(got) + "\nexpected\n  " + "\n  ".join(want))


def test_checker_catches_planted_violations():
    self_test()


def test_package_uses_no_private_names_of_others():
    found = violations(pathlib.Path(__file__).resolve().parents[2] / "python" / "tailcut")
    assert not found, "\n".join(found)


def main(argv):
    self_test()
    package = pathlib.Path(argv[1]) if len(argv) > 1 else pathlib.Path(__file__).resolve().parents[2] / "python" / "tailcut"
    found = violations(package)
    for line in found:
        print(line)
    print(f"{len(found)} use(s) of another module's private names in {package}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
