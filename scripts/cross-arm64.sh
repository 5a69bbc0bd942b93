#!/usr/bin/env bash
# Cross-builds the executor (tailcut-executor) and the CLI (tailcut) for
# aarch64 (ARM64) Linux on a Debian 12 x86-64 host, CUDA off (docs/EDGE.md),
# then runs the qemu check (scripts/arm64-qemu-check.sh): the ARM64 executor
# under qemu-user against an x86-64 scheduler on loopback completes a job.
# Installs what is missing (like scripts/setup.sh): the arm64 architecture,
# crossbuild-essential-arm64, qemu-user-static and the arm64 dev packages.
# Usage: scripts/cross-arm64.sh [--no-check] [extra cmake -D options]
# Env: BUILD (default build-arm64), JOBS (default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."

check=1
if [[ ${1:-} == --no-check ]]; then check=0; shift; fi
BUILD=${BUILD:-build-arm64}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "cross-arm64: adding the arm64 architecture"
  $sudo dpkg --add-architecture arm64
  need_update=1
fi
packages=(build-essential cmake pkg-config protobuf-compiler cppzmq-dev crossbuild-essential-arm64 qemu-user-static
          libboost-fiber-dev:arm64 libzmq3-dev:arm64 libprotobuf-dev:arm64 libtomlplusplus-dev:arm64
          libsqlite3-dev:arm64 libraft-dev:arm64 libuv1-dev:arm64 libsodium-dev:arm64)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})) || [[ -n ${need_update:-} ]]; then
  $sudo apt-get update -qq
fi
if ((${#missing[@]})); then
  echo "cross-arm64: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B "$BUILD" -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchain-aarch64.cmake" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTAILCUT_CUDA=OFF -DTAILCUT_BUILD_TESTS=OFF -DTAILCUT_BUILD_BENCH=OFF "$@" >/dev/null
cmake --build "$BUILD" -j "$JOBS" --target tailcut-executor tailcut
file "$BUILD/bin/tailcut-executor" "$BUILD/bin/tailcut" 2>/dev/null ||
  echo "cross-arm64: built $BUILD/bin/tailcut-executor $BUILD/bin/tailcut"

if ((check)); then
  ARM64_BUILD="$BUILD" scripts/arm64-qemu-check.sh
fi
