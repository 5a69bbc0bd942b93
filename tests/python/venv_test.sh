#!/usr/bin/env bash
# ctest python_venv_install (docs/PYTHON.md): the package as a user of a
# venv gets it. Debian's python3 makes a venv (--system-site-packages, so
# its pyzmq and protobuf serve as the declared dependencies), pip installs
# a copy of python/ without network or build isolation, and the example
# runs from the installed package with the daemons found on PATH. Then a
# bare venv (no pyzmq, no protobuf: pyenv's python3 here, a fresh conda
# env) runs the example from the source tree: it must stop with one line
# naming what to install, not a traceback.
# Skipped (exit 77) without python3-venv, python3-setuptools, python3-wheel.
# Usage: venv_test.sh BIN_DIR SRC_DIR VERSION
set -euo pipefail
bin=$(cd "$1" && pwd) src=$(cd "$2" && pwd) version=$3
py=/usr/bin/python3
skip() { echo "python venv test: $*: skipped"; exit 77; }
[[ -x $py ]] || skip "no /usr/bin/python3"
$py -c 'import ensurepip, venv' 2>/dev/null || skip "python3-venv not installed (apt-get install python3-venv)"
$py -c 'import setuptools, wheel' 2>/dev/null ||
  skip "python3-setuptools or python3-wheel not installed (apt-get install python3-setuptools python3-wheel)"
# shellcheck source=tests/script_lib.sh
source "$(dirname "$0")/../script_lib.sh" venv
export PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
unset TAILCUT_BIN TAILCUT_BUILD_DIR TAILCUT_SCHEDULER PYTHONPATH

# A copy: pip builds in the folder it is given (build/, *.egg-info).
cp -r "$src/python" "$work/src"
rm -rf "$work/src/build" "$work/src"/*.egg-info
$py -m venv --system-site-packages "$work/venv" >"$work/venv.log" 2>&1 || fail "venv creation failed"
"$work/venv/bin/pip" install --no-build-isolation --no-index "$work/src" >"$work/pip.log" 2>&1 ||
  fail "pip install failed"

# Installed into the venv, with this version and the dependencies the
# import-time check names.
"$work/venv/bin/python" - "$work/venv" "$version" <<'PY' >"$work/check.log" 2>&1 || fail "installed package wrong"
import importlib.metadata as md, re, sys
import tailcut
from tailcut import _requires
venv, version = sys.argv[1:]
assert tailcut.__file__.startswith(venv + "/"), f"imported {tailcut.__file__}, not the venv's"
assert tailcut.__version__ == version == md.version("tailcut"), (tailcut.__version__, md.version("tailcut"), version)
# Extras (cloudpickle for Python functions) are optional: not the import-time check's.
declared = {re.split(r"[ (<>=]", r)[0]: r for r in md.requires("tailcut") if "extra ==" not in r}
assert any(r.startswith("cloudpickle") and "extra == 'functions'" in r for r in md.requires("tailcut")), md.requires("tailcut")
for _, _, pip, minimum in _requires.REQUIRED:
    want = f"{minimum[0]}.{minimum[1]}"
    assert pip in declared and want in declared[pip], f"pyproject declares {declared}, the check wants {pip}>={want}"
assert len(declared) == len(_requires.REQUIRED), declared
print("ok", tailcut.__file__)
PY

# The example from the installed package (python/examples is not a package
# folder), the daemons from PATH as for an installed tailcut.
(cd "$work" && PATH="$bin:$PATH" "$work/venv/bin/python" "$src/python/examples/fanout.py" >"$work/fanout.log" 2>&1) ||
  fail "the example failed"
grep -q "from $bin)" "$work/fanout.log" || fail "the example did not take the daemons from PATH ($bin)"
grep -Eq '^job [0-9]+ succeeded: 8/8 tasks' "$work/fanout.log" || fail "the example's job did not succeed"

# A Python without the dependencies: one line, what to install for apt and pip.
$py -m venv --without-pip "$work/bare" >>"$work/venv.log" 2>&1 || fail "bare venv creation failed"
rc=0
PYTHONPATH="$src/python" "$work/bare/bin/python" "$src/python/examples/fanout.py" >"$work/bare.out" 2>"$work/bare.err" || rc=$?
[[ $rc == 1 ]] || fail "without pyzmq/protobuf the example exited $rc, wanted 1: $(cat "$work/bare.err")"
[[ $(wc -l <"$work/bare.err") == 1 && ! -s $work/bare.out ]] || fail "not one line: $(cat "$work/bare.out" "$work/bare.err")"
for want in "apt-get install python3-zmq python3-protobuf" "pip install 'pyzmq>=" "'protobuf>="; do
  grep -qF "$want" "$work/bare.err" || fail "the message lacks \"$want\": $(cat "$work/bare.err")"
done
echo "python venv test: ok ($(sed -n 's/^ok //p' "$work/check.log"); $(grep -E '^job ' "$work/fanout.log"))"
echo "without the dependencies: $(cat "$work/bare.err")"
