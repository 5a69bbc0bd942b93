#!/usr/bin/env bash
# Checks that no two classes share a name across the tree (docs/ARCHITECTURE.md,
# "Names"): every namespace-scope `class X` / `struct X` definition (an
# unindented line, as the style writes them) in the C++/CUDA sources below
# ROOT, tests/ and build folders aside (a test's fixtures are its own), must
# name a class defined nowhere else. Forward declarations do not count.
#
#   scripts/check-class-names.sh [ROOT]   ROOT default: the repository
# Exit 0: every name is unique; 1: the duplicates are printed, each with its
# files; 2: usage.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
[[ -d $root ]] || { echo "check-class-names: no folder $root" >&2; exit 2; }
cd "$root"
dups=$(find . \( -path ./tests -o -path './build*' -o -path ./.git -o -path ./shared \) -prune -o -type f \
         \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' \) -print0 |
       xargs -0 -r grep -HnE '^(class|struct) [A-Za-z_][A-Za-z0-9_]*( final)? *(:[^:]|\{|$)' |
       sed -E 's/^\.\/([^:]*):([0-9]+):(class|struct) ([A-Za-z0-9_]+).*/\4 \1:\2/' | sort |
       awk '{n[$1]++; at[$1] = at[$1] " " $2} END {for (k in n) if (n[k] > 1) print k ":" at[k]}' | sort)
if [[ -n $dups ]]; then
  echo "check-class-names: classes that share a name (rename one of each):"
  echo "$dups" | sed 's/^/  /'
  exit 1
fi
echo "check-class-names: every class name is unique"
