#!/usr/bin/env bash
# ctest python_wheel_install (docs/PYTHON.md, "Installing it"): the built
# wheel, BUILD/python/dist/tailcut-VERSION-py3-none-any.whl, installs with
# `pip install --no-index` (no network, no build backend) into
#  1. a venv of Debian's python3 that sees its python3-zmq/-protobuf: the
#     dependencies are met, and the example runs from the installed package;
#  2. a bare venv of each other Python >= 3.11 found (pyenv's 3.11 on PATH,
#     more from $PYENV_ROOT/versions; $TAILCUT_OTHER_PYTHONS overrides; none:
#     Debian's python3 without its site packages), with
#     --no-deps, since pyzmq and protobuf cannot come from anywhere offline:
#     there `import tailcut` must fail with one line naming what to install.
# Skipped (77) when the wheel was not built (no setuptools/wheel) or
# without python3-venv. Usage: wheel_test.sh BIN_DIR SRC_DIR BUILD_DIR VERSION
set -euo pipefail
bin=$(cd "$1" && pwd) src=$(cd "$2" && pwd) build=$(cd "$3" && pwd) version=$4
wheel=$build/python/dist/tailcut-$version-py3-none-any.whl
skip() { echo "python wheel test: $*: skipped"; exit 77; }
[[ -f $wheel ]] || skip "no $wheel (cmake --build build --target python_wheel; needs python3-setuptools python3-wheel)"
/usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null || skip "python3-venv not installed"
# shellcheck source=tests/script_lib.sh
source "$(dirname "$0")/../script_lib.sh" wheel
export PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
unset TAILCUT_BIN TAILCUT_BUILD_DIR TAILCUT_SCHEDULER PYTHONPATH

# 1. Debian's python3, its packages as the dependencies.
/usr/bin/python3 -m venv --system-site-packages "$work/debian" >"$work/venv.log" 2>&1 || fail "venv creation failed"
"$work/debian/bin/pip" install --no-index "$wheel" >"$work/pip-debian.log" 2>&1 ||
  fail "pip install --no-index of the wheel failed: $(tail -3 "$work/pip-debian.log")"
"$work/debian/bin/python" - "$work/debian" "$version" <<'PY' >"$work/check.log" 2>&1 || fail "installed wheel wrong: $(cat "$work/check.log")"
import importlib.metadata as md, sys
import tailcut
venv, version = sys.argv[1:]
assert tailcut.__file__.startswith(venv + "/"), tailcut.__file__
assert tailcut.__version__ == version == md.version("tailcut")
assert md.metadata("tailcut")["Requires-Python"] == ">=3.11"
wheel = md.distribution("tailcut").read_text("WHEEL")
assert "Tag: py3-none-any" in wheel and "Root-Is-Purelib: true" in wheel, wheel
print("ok")
PY
(cd "$work" && PATH="$bin:$PATH" "$work/debian/bin/python" "$src/python/examples/fanout.py" >"$work/fanout.log" 2>&1) ||
  fail "the example failed from the wheel: $(tail -3 "$work/fanout.log")"
grep -Eq '^job [0-9]+ succeeded: 8/8 tasks' "$work/fanout.log" || fail "the example's job did not succeed"

# 2. Other Pythons, bare.
others=${TAILCUT_OTHER_PYTHONS:-}
if [[ -z $others ]]; then
  for py in "$(command -v python3 || true)" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[1-9]*/bin/python3; do
    [[ -x $py ]] || continue
    real=$("$py" -c 'import sys; print(sys.executable if sys.version_info >= (3, 11) else "")' 2>/dev/null || true)
    [[ -n $real && $real != /usr/bin/python3* && $real != /bin/python3* && " $others " != *" $real "* ]] && others+=" $real"
  done
fi
# None found (a CI machine with only Debian's): a bare venv of Debian's
# python3 (no system site packages) is the same case.
[[ -n ${others// /} ]] || others=/usr/bin/python3
tested=()
for py in $others; do
  name=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
  v=$work/bare-$name
  "$py" -m venv "$v" >>"$work/venv.log" 2>&1 || fail "venv of $py failed"
  "$v/bin/pip" install --no-index --no-deps "$wheel" >"$work/pip-$name.log" 2>&1 ||
    fail "pip install --no-index of the wheel into a venv of $py failed: $(tail -3 "$work/pip-$name.log")"
  rc=0
  (cd "$work" && "$v/bin/python" -c 'import tailcut') >"$work/import-$name.out" 2>"$work/import-$name.err" || rc=$?
  [[ $rc == 1 ]] || fail "import tailcut without pyzmq/protobuf in Python $name exited $rc, wanted 1"
  last=$(tail -1 "$work/import-$name.err")
  for want in "ImportError: tailcut needs zmq, google.protobuf in $v/bin/python" "pip install 'pyzmq>=" "'protobuf>="; do
    [[ $last == *"$want"* ]] || fail "Python $name: the error lacks \"$want\": $last"
  done
  # The message itself is one line (a program printing it, as the example does).
  lines=$(cd "$work" && "$v/bin/python" -c 'try:
    import tailcut
except ImportError as e:
    print(e)' | wc -l)
  [[ $lines == 1 ]] || fail "Python $name: the message is $lines lines"
  tested+=("$name")
done
echo "python wheel test: ok ($(basename "$wheel"); Debian's python3: $(grep -E '^job ' "$work/fanout.log");" \
  "bare venvs of Python ${tested[*]}: one line naming what to install)"
