#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages), then configures and builds
# tailcut into ./build. Safe to re-run: it only installs and rebuilds what
# changed. Usage: scripts/setup.sh [extra cmake -D options]
# (TAILCUT_SETUP_BROWSER=1 adds chromium for the dashboard test)
# TAILCUT_SETUP_FUZZ=1 also installs clang-14 and its libFuzzer runtime
# (scripts/fuzz.sh, docs/SECURITY.md; its build also checks clang's
# thread-safety annotations). clang-format-14 always: scripts/check-format.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config libboost-fiber-dev libzmq3-dev cppzmq-dev
          libtomlplusplus-dev catch2 libbenchmark-dev libprotobuf-dev protobuf-compiler
          libsqlite3-dev
          libcpp-httplib-dev  # the scheduler's /metrics (docs/METRICS.md)
          clang-format-14     # scripts/check-format.sh (.clang-format)
          python3 python3-zmq python3-protobuf python3-pytest)  # the Python client and its tests (docs/PYTHON.md)
# TAILCUT_SETUP_BROWSER=1: also Debian's chromium (~300 MB), for the
# dashboard's headless-browser test (docs/DASHBOARD.md); CI sets it.
[[ ${TAILCUT_SETUP_BROWSER:-0} == 1 ]] && packages+=(chromium)
[[ ${TAILCUT_SETUP_FUZZ:-0} == 1 ]] && packages+=(clang-14 libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build build -j "$jobs"
echo "setup: built into ./build (binaries in build/bin)"
