"""The protocol module, generated from wire/proto/tailcut.proto.

tailcut_pb2.py is protoc's output, committed so that `pip install ./python`
works in any environment without protoc; the ctest python_proto_current
regenerates it and fails if the copy differs from the .proto (after
editing the .proto: `cmake --build build --target python_proto_update`).
Imported through here, after tailcut/__init__.py checked that
google.protobuf is there and new enough (_requires.py).
"""

from . import tailcut_pb2 as pb  # noqa: F401
