#!/usr/bin/env bash
# Checks scripts/check-class-names.sh itself: a planted tree under $2 with
# one class name defined twice (a.h, src/b.cpp) and one forward-declared,
# nested or test-only name that must not count; mode `clean` drops the
# second definition. The test's regex reads the script's verdict.
set -euo pipefail
script=$1 out=$2 mode=$3
rm -rf "$out" && mkdir -p "$out/src" "$out/tests"
printf 'class Twice {\n};\nclass Declared;\nstruct Outer {\n  struct Nested {};\n};\n' >"$out/a.h"
printf 'struct Nested {};\nclass Declared;\n' >"$out/src/c.cpp"
printf 'struct Outer {};\n' >"$out/tests/t.cpp"
[[ $mode == clean ]] || printf 'struct Twice : Base {};\n' >"$out/src/b.cpp"
"$script" "$out" || true
