#!/usr/bin/env bash
# ctest python_proto_current: the committed python/tailcut/tailcut_pb2.py
# must be exactly what this protoc makes from wire/proto/tailcut.proto, so
# the Python client speaks the daemons' protocol (docs/PYTHON.md).
# Usage: proto_current.sh PROTOC SRC_DIR
set -euo pipefail
protoc=$1 src=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/tailcut-proto-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$protoc" --python_out="$work" -I "$src/wire/proto" "$src/wire/proto/tailcut.proto"
if ! cmp -s "$work/tailcut_pb2.py" "$src/python/tailcut/tailcut_pb2.py"; then
  echo "python/tailcut/tailcut_pb2.py differs from what $("$protoc" --version) makes of wire/proto/tailcut.proto;" \
       "regenerate it: cmake --build build --target python_proto_update" >&2
  exit 1
fi
echo "python proto: tailcut_pb2.py is current ($("$protoc" --version))"
