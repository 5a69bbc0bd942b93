#!/usr/bin/env bash
# The pure-Python wheel of the client (docs/PYTHON.md, "Installing it"),
# built offline with Debian's setuptools and wheel through setuptools' own
# PEP 517 hook (no pip, no build isolation, no network), from a copy so the
# source tree gets no build/ or *.egg-info. CMake target python_wheel (in
# `all`). Usage: build_wheel.sh PYTHON SRC_DIR OUT_DIR
set -euo pipefail
py=$1 src=$2 out=$3
if ! "$py" -c 'import setuptools.build_meta, wheel' 2>/dev/null; then
  echo "python_wheel: skipped: $py lacks setuptools or wheel (apt-get install python3-setuptools python3-wheel)"
  exit 0
fi
stage="$out/../stage"
rm -rf "$stage" && mkdir -p "$stage" "$out"
cp -r "$src/pyproject.toml" "$src/tailcut" "$stage/"
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
rm -f "$out"/tailcut-*.whl
(cd "$stage" && "$py" -c 'import sys
from setuptools import build_meta
print(build_meta.build_wheel(sys.argv[1]))' "$out" >"$stage.log" 2>&1) || { cat "$stage.log"; exit 1; }
echo "python_wheel: $(ls "$out"/tailcut-*.whl)"
