#!/usr/bin/env bash
# Checks that the C/C++ lines changed in a commit range follow .clang-format
# (clang-format-14), so the tree converges on one style without a wholesale
# reformat that would conflict with every open branch. Lines a change does
# not touch are left as they are.
#
#   scripts/check-format.sh [BASE [HEAD]]   BASE default: merge-base with main
#                                           (or HEAD~1); HEAD default: HEAD
#   scripts/check-format.sh --fix [BASE]    reformat those lines in the work tree
# Exit 0: formatted; 1: not (the diff that would fix it is printed); 2: usage.
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
if [[ ${1:-} == --fix ]]; then fix=1; shift; fi
case ${1:-} in -h | --help) sed -n '2,10p' "$0"; exit 0 ;; esac
cf=${CLANG_FORMAT:-clang-format-14}
gcf=${GIT_CLANG_FORMAT:-git-clang-format-14}
command -v "$cf" >/dev/null && command -v "$gcf" >/dev/null ||
  { echo "check-format: needs $cf and $gcf (apt-get install clang-format-14; scripts/setup.sh installs it)" >&2; exit 2; }
base=${1:-$(git merge-base HEAD main 2>/dev/null || true)}
# On main itself (or without it): the last commit.
[[ -z $base || $base == "$(git rev-parse HEAD)" ]] && [[ -z ${1:-} ]] && base=$(git rev-parse HEAD~1)
head=${2:-HEAD}
git rev-parse --verify -q "$base^{commit}" >/dev/null || { echo "check-format: no commit $base" >&2; exit 2; }
exts=c,cc,cpp,cu,h,hpp
if ((fix)); then
  exec "$gcf" --binary "$cf" --extensions "$exts" "$base"
fi
out=$("$gcf" --binary "$cf" --extensions "$exts" --diff "$base" "$head" 2>&1) || true
if [[ -z $out || $out == "no modified files to format" || $out == "clang-format did not modify any files" ]]; then
  echo "check-format: lines changed in $base..$head are formatted"
  exit 0
fi
echo "$out"
echo "check-format: lines changed in $base..$head are not formatted (.clang-format); fix with: scripts/check-format.sh --fix $base" >&2
exit 1
