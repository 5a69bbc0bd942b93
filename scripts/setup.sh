#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages), then configures and builds
# tailcut into ./build. Safe to re-run: it only installs and rebuilds what
# changed. Usage: scripts/setup.sh [extra cmake -D options]
# (TAILCUT_SETUP_BROWSER=1 adds chromium for the dashboard test)
# TAILCUT_SETUP_FUZZ=1 also installs clang-14 and its libFuzzer runtime
# (scripts/fuzz.sh, docs/SECURITY.md; its build also checks clang's
# thread-safety annotations). clang-format-14 always: scripts/check-format.sh.
# TAILCUT_SETUP_SLURM=1: slurm-wlm and munge, for the real-Slurm test
# (ctest slurm_real, docs/DEPLOY.md).
# TAILCUT_SETUP_PROMETHEUS=1: prometheus (with promtool) and curl, for the
# real scrape and the rules' tests (docs/METRICS.md). CI sets all of them
# (and TAILCUT_SETUP_PYTHON_DOORS, below).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config libboost-fiber-dev libzmq3-dev cppzmq-dev
          libtomlplusplus-dev catch2 libbenchmark-dev libprotobuf-dev protobuf-compiler
          libsqlite3-dev
          libraft-dev libuv1-dev libsodium-dev  # the scheduler's replicas (Raft, docs/RELIABILITY.md)
          libcpp-httplib-dev  # the scheduler's /metrics (docs/METRICS.md)
          libcli11-dev        # every program's command line (programs/cli, docs/CLI.md)
          clang-format-14     # scripts/check-format.sh (.clang-format)
          python3 python3-zmq python3-protobuf python3-pytest  # the Python client and its tests (docs/PYTHON.md)
          python3-venv python3-setuptools python3-wheel  # its offline `pip install` test (ctest python_venv_install)
          python3-cloudpickle)  # Python functions as tasks (docs/PYTHON.md, "Python functions")
# TAILCUT_SETUP_BROWSER=1: also Debian's chromium (~300 MB), for the
# dashboard's headless-browser test (docs/DASHBOARD.md); CI sets it.
[[ ${TAILCUT_SETUP_BROWSER:-0} == 1 ]] && packages+=(chromium)
[[ ${TAILCUT_SETUP_FUZZ:-0} == 1 ]] && packages+=(clang-14 libclang-rt-14-dev)
[[ ${TAILCUT_SETUP_SLURM:-0} == 1 ]] && packages+=(slurm-wlm munge)
[[ ${TAILCUT_SETUP_PROMETHEUS:-0} == 1 ]] && packages+=(prometheus curl)
# TAILCUT_SETUP_DASK=1: python3-distributed and python3-numpy, for the
# benchmark against Dask (bench/python/functions_bench.py, docs/benchmarks/python.md).
[[ ${TAILCUT_SETUP_DASK:-0} == 1 ]] && packages+=(python3-distributed python3-numpy)
# TAILCUT_SETUP_PYTHON_DOORS=1: CPython's executor tests (libpython3.11-testsuite),
# joblib and scikit-learn for the joblib backend's tests, tqdm for progress
# bars (docs/PYTHON.md: ctest python_cpython_futures_test, python_joblib_test).
[[ ${TAILCUT_SETUP_PYTHON_DOORS:-0} == 1 ]] &&
  packages+=(libpython3.11-testsuite python3-joblib python3-sklearn python3-tqdm)
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
  # The tests start private instances (own ports, sockets, temp dirs); the
  # system services these packages just enabled would only sit there.
  if [[ -d /run/systemd/system ]]; then
    declare -A units_of=([prometheus]="prometheus" [munge]="munge" [slurm-wlm]="slurmctld slurmd")
    for p in "${missing[@]}"; do
      for unit in ${units_of[$p]:-}; do $sudo systemctl disable --now "$unit" >/dev/null 2>&1 || true; done
    done
  fi
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build build -j "$jobs"
echo "setup: built into ./build (binaries in build/bin)"
