#!/usr/bin/env bash
# Fuzzing (docs/SECURITY.md, "Fuzzing").
#   scripts/fuzz.sh build               configure build-fuzz (clang-14, TAILCUT_FUZZ=ON) and build the targets,
#                                       and the libraries whose thread-safety annotations clang checks
#   scripts/fuzz.sh TARGET SECONDS      run one target on one core, then print its figures
#   scripts/fuzz.sh summary             sum the figures of every run logged so far, per target
# Runs add their new inputs to build-fuzz/fuzz/work/TARGET/corpus (the seed
# corpus in tests/fuzz/corpus is only read), crashes next to it, and log to
# $FUZZ_LOG_DIR (default build-fuzz/fuzz/logs), one file per run.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${FUZZ_BUILD_DIR:-build-fuzz}
logs=${FUZZ_LOG_DIR:-$build/fuzz/logs}
targets=(executor_message client_request scheduler_to_executor client_reply config_toml trace_csv job_file)
annotated=(tailcut_common tailcut_executor tailcut_scheduler tailcut_local_cluster tailcut_live)

# "target runs inputs seconds crashes" from one run's log.
figures() {
  local log=$1 name
  name=$(basename "$log" | sed -E 's/-[0-9]{8}T[0-9]{6}\.log$//')
  awk -v t="$name" '
    /stat::number_of_executed_units:/ { units = $2 }
    /stat::average_exec_per_sec:/ { eps = $2 }
    /^Done [0-9]+ runs in [0-9]+ second/ { secs = $5 }
    /ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error:/ { crash = 1 }
    END { if (secs == "" && eps > 0) secs = units / eps; printf "%s %d %d %d\n", t, units, secs, crash }' "$log"
}

case ${1:-} in
  build)
    export CCACHE_DIR=${CCACHE_DIR:-$HOME/.ccache}
    launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -DTAILCUT_FUZZ=ON -DTAILCUT_CUDA=OFF -DTAILCUT_BUILD_BENCH=OFF \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
    # The libraries with thread-safety annotations too: clang checks them
    # here (-Werror=thread-safety, CMakeLists.txt).
    cmake --build "$build" -j "${FUZZ_JOBS:-$(nproc)}" --target "${targets[@]/#/fuzz_}" security_test \
      "${annotated[@]}"
    ;;
  summary)
    printf '%-22s %5s %14s %8s %8s %8s\n' target runs inputs seconds exec/s crashes
    for t in "${targets[@]}"; do
      shopt -s nullglob
      files=("$logs/$t"-*.log)
      ((${#files[@]})) || continue
      for f in "${files[@]}"; do figures "$f"; done | awk -v t="$t" '
        { runs++; units += $2; secs += $3; crashes += $4 }
        END { printf "%-22s %5d %14d %8d %8d %8d\n", t, runs, units, secs, secs ? units / secs : 0, crashes }'
    done
    ;;
  "" | -h | --help)
    sed -n '2,9p' "$0"
    ;;
  *)
    t=$1 seconds=${2:?usage: scripts/fuzz.sh TARGET SECONDS}
    shift 2
    bin=$build/fuzz/fuzz_$t
    [[ -x $bin ]] || { echo "fuzz.sh: no $bin; run scripts/fuzz.sh build" >&2; exit 2; }
    work=$build/fuzz/work/$t
    mkdir -p "$work/corpus" "$logs"
    log=$logs/$t-$(date +%Y%m%dT%H%M%S).log
    dict=()
    [[ -f tests/fuzz/dict/$t.dict ]] && dict=(-dict=tests/fuzz/dict/$t.dict)
    rc=0
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
      "$bin" -max_total_time="$seconds" -timeout=25 -print_final_stats=1 -artifact_prefix="$work/" "${dict[@]}" "$@" \
      "$work/corpus" "tests/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
    read -r name units secs crash < <(figures "$log")
    echo "$name: $units inputs in $secs s ($((secs ? units / secs : 0)) exec/s), crashed: $([[ $crash == 1 ]] && echo yes || echo no); log $log"
    exit "$rc"
    ;;
esac
