#!/usr/bin/env bash
# The install test (ctest install_find_package, docs/DEPLOY.md): installs a
# built tree into a temporary prefix, checks the layout, builds the
# out-of-tree client (find_package and pkg-config), policy plugin and
# kernel plugin (C) in tests/install/ against that prefix only, then runs
# the installed scheduler with the plugin in its chain, an installed
# executor with the kernel plugin, the client's --help and a 20-task job,
# and a job of the plugin's kernel; a kernel plugin built for another API
# version must be refused.
# Usage: run.sh BUILD_DIR SOURCE_DIR CXX [CXX_FLAGS] [LAUNCHER]
set -euo pipefail
build=$1 src=$2 cxx=$3 flags=${4:-} launcher=${5:-}
# shellcheck source=tests/script_lib.sh
source "$(dirname "$0")/../script_lib.sh" install

prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || fail "cmake --install failed"
for f in bin/tailcut bin/tailcut-scheduler bin/tailcut-executor \
         include/tailcut/client/client.h include/tailcut/plugins/plugin_api.h include/tailcut/core/policy.h \
         include/tailcut/common/version.h include/tailcut.pb.h \
         lib/cmake/tailcut/tailcutConfig.cmake lib/cmake/tailcut/tailcutTargets.cmake lib/pkgconfig/tailcut.pc \
         lib/libtailcut_client.a lib/libtailcut_wire.a lib/libtailcut_common.a \
         lib/systemd/system/tailcut-scheduler.service lib/systemd/system/tailcut-executor@.service \
         share/tailcut/configs/scheduler.toml share/tailcut/configs/replicas.toml; do
  [[ -e $prefix/$f ]] || fail "$f was not installed"
done
grep -q "^ExecStart=$prefix/bin/tailcut-scheduler " "$prefix/lib/systemd/system/tailcut-scheduler.service" ||
  fail "the scheduler unit does not start $prefix/bin/tailcut-scheduler"
grep -q "^ExecStart=$prefix/bin/tailcut-executor .*executor-%i.toml" "$prefix/lib/systemd/system/tailcut-executor@.service" ||
  fail "the executor unit does not start $prefix/bin/tailcut-executor with its instance's config"
# The package must not point back into the source or build tree.
if grep -rlF -e "$src/" -e "$build/" "$prefix/lib/cmake/tailcut" "$prefix/lib/pkgconfig"; then
  fail "the installed package names build-tree paths"
fi

[[ -e $prefix/include/tailcut/executor/kernel_plugin_api.h ]] || fail "kernel_plugin_api.h was not installed"

# Out of tree, against the prefix only.
for p in client plugin kernel_plugin; do
  cmake -S "$src/tests/install/$p" -B "$work/$p" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" \
    >"$work/$p-configure.log" 2>&1 || fail "configuring the out-of-tree $p failed"
  cmake --build "$work/$p" -j2 >"$work/$p-build.log" 2>&1 || fail "building the out-of-tree $p failed"
done
# shellcheck disable=SC2046,SC2086  # pkg-config output and the flags are meant to split
PKG_CONFIG_PATH=$prefix/lib/pkgconfig ${launcher:+$launcher} "$cxx" $flags "$src/tests/install/client/main.cpp" \
  -o "$work/hello-pc" $(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs tailcut) \
  >"$work/pc-build.log" 2>&1 || fail "building the client with pkg-config tailcut failed"

"$work/client/tailcut-hello" --help | grep -q "^tailcut-hello [0-9.]* (protocol [0-9]*)" || fail "tailcut-hello --help"
"$prefix/bin/tailcut-scheduler" --version >/dev/null || fail "the installed scheduler does not run"

# A kernel plugin built for another API version: refused, naming both versions (exit 2).
stale=$(ls "$work"/kernel_plugin/*stale_kernels*.so)
kplugin=$(ls "$work"/kernel_plugin/*wordcount_kernels*.so)
set +e
"$prefix/bin/tailcut-executor" --kernel-plugin "$stale" >"$work/stale.log" 2>&1
rc=$?
set -e
[[ $rc == 2 ]] || fail "the executor took a stale kernel plugin (exit $rc): $(cat "$work/stale.log")"
grep -q "kernel plugin '$stale': kernel plugin API version [0-9]*, this tailcut supports [0-9]* (rebuild the plugin)" \
  "$work/stale.log" || fail "no clear refusal of the stale kernel plugin: $(cat "$work/stale.log")"

# The installed daemons, the plugin in the scheduler's chain, the kernel plugin on the executor.
port=$tc_port_base
plugin=$(ls "$work"/plugin/*hello_policy*.so)
"$prefix/bin/tailcut-scheduler" --executor-endpoint "tcp://127.0.0.1:$port" \
  --client-endpoint "tcp://127.0.0.1:$((port + 1))" --http-listen '' --set 'scheduler.state_dir=""' \
  --policy "plugin:$plugin#hello" >"$work/scheduler.log" 2>&1 &
pids+=($!)
"$prefix/bin/tailcut-executor" --scheduler "tcp://127.0.0.1:$port" --slots 2 --kernel-plugin "$kplugin" \
  --set allow_kernels=noop,wordcount >"$work/executor.log" 2>&1 &
pids+=($!)
out=$("$work/client/tailcut-hello" --scheduler "tcp://127.0.0.1:$((port + 1))" --tasks 20) ||
  fail "tailcut-hello (find_package) failed: $out"
[[ $out == *"JOB_SUCCEEDED, 20/20 tasks committed"* ]] || fail "unexpected: $out"
out=$("$work/hello-pc" --scheduler "tcp://127.0.0.1:$((port + 1))" --tasks 5) || fail "tailcut-hello (pkg-config) failed: $out"
[[ $out == *"JOB_SUCCEEDED, 5/5 tasks committed"* ]] || fail "unexpected: $out"
grep -q "hello from an out-of-tree plugin" "$work/scheduler.log" || fail "the plugin did not load"
# A job of the out-of-tree kernel plugin's kernel, end to end, with the installed CLI.
cat >"$work/wordcount.toml" <<'TOML'
name = "wordcount"
count = 3
return_outputs = true
[template]
kernel = "wordcount"
args = "one two three four"
TOML
ep=(--scheduler "tcp://127.0.0.1:$((port + 1))")
out=$("$prefix/bin/tailcut" submit "$work/wordcount.toml" --wait --json "${ep[@]}" 2>&1) ||
  fail "the wordcount job failed: $out"
job=$(sed -n 's/.*"job_id": *"\{0,1\}\([0-9]*\).*/\1/p' <<<"$out" | head -1)
[[ -n $job ]] || fail "no job id in: $out"
results=$("$prefix/bin/tailcut" results "$job" "${ep[@]}") || fail "tailcut results $job failed"
n=$(grep -c "words=4 task=" <<<"$results" || true)
[[ $n == 3 ]] || fail "expected 3 wordcount outputs, got $n: $results"
echo "install test: ok ($prefix: find_package and pkg-config client, out-of-tree plugin loaded, 25 tasks run;" \
  "out-of-tree kernel plugin: $n wordcount tasks, the stale one refused)"
