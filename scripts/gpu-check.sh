#!/usr/bin/env bash
# GPU check (docs/GPU.md): build with CUDA into build-gpu, run the GPU tests
# (ctest -L gpu), a short GPU benchmark (matmul GPU vs CPU via gpu_check) and
# one `tailcut train --gpu`, then print PASS / FAIL / SKIPPED per step.
# On a machine without a CUDA device the GPU steps report SKIPPED.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-gpu}
JOBS=${JOBS:-$(nproc)}
declare -A RESULT
ORDER=()
record() { RESULT[$1]=$2; ORDER+=("$1"); }

echo "== configure + build ($BUILD, TAILCUT_CUDA=ON)"
if cmake -S . -B "$BUILD" -DTAILCUT_CUDA=ON -DTAILCUT_BUILD_BENCH=OFF >"$BUILD.configure.log" 2>&1 &&
   cmake --build "$BUILD" -j "$JOBS" --target tailcut tailcut-executor gpu_test gpu_check >"$BUILD.build.log" 2>&1; then
  record build PASS
else
  record build FAIL
  echo "build failed; see $BUILD.configure.log / $BUILD.build.log"
  tail -20 "$BUILD.build.log" 2>/dev/null || true
fi

if [[ ${RESULT[build]} == PASS ]]; then
  echo "== ctest -L gpu"
  set +e
  (cd "$BUILD" && ctest -L gpu --output-on-failure) | tee "$BUILD.ctest.log"
  rc=${PIPESTATUS[0]}
  set -e
  if [[ $rc -ne 0 ]]; then
    record "ctest -L gpu" FAIL
  elif grep -q "Skipped" "$BUILD.ctest.log" || grep -q "\*\*\*Skipped" "$BUILD.ctest.log"; then
    record "ctest -L gpu" "PASS (GPU agreement SKIPPED: no CUDA device)"
  else
    record "ctest -L gpu" PASS
  fi

  echo "== benchmark: GPU vs CPU twins (gpu_check)"
  set +e
  "$BUILD/tests/gpu/gpu_check"
  rc=$?
  set -e
  case $rc in
    0) record "gpu benchmark" PASS ;;
    77) record "gpu benchmark" SKIPPED ;;
    *) record "gpu benchmark" FAIL ;;
  esac

  echo "== tailcut train --gpu"
  if [[ $rc == 77 ]]; then
    record "train --gpu" SKIPPED
  else
    set +e
    "$BUILD/bin/tailcut" train --gpu --iters 10
    trc=$?
    set -e
    [[ $trc == 0 ]] && record "train --gpu" PASS || record "train --gpu" FAIL
  fi
fi

echo
echo "== summary"
status=0
for k in "${ORDER[@]}"; do
  printf '  %-16s %s\n' "$k" "${RESULT[$k]}"
  [[ ${RESULT[$k]} == FAIL ]] && status=1
done
if [[ $status == 0 ]]; then echo "gpu-check: PASS"; else echo "gpu-check: FAIL"; fi
exit $status
