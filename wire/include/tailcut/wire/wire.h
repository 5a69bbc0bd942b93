// Helpers for the wire protocol: one serialized protobuf per ZeroMQ frame.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

#include "tailcut.pb.h"
#include "tailcut/common/status.h"
#include "tailcut/common/version.h"

namespace tailcut {

inline constexpr uint32_t kProtocolVersion = wire::PROTOCOL_VERSION_CURRENT;
static_assert(kProtocolVersion == kProtocolVersionNumber, "version.h is stale: re-run CMake");

zmq::message_t ToFrame(const google::protobuf::MessageLite& msg);
// False when the bytes do not parse as `msg`.
bool FromFrame(const zmq::message_t& frame, google::protobuf::MessageLite* msg);

// Accepts tcp://HOST:PORT (PORT may be * when binding), ipc://PATH,
// inproc://NAME. Rejects the rest with a message that says what to write.
Status ValidateEndpoint(std::string_view endpoint);
// A list of endpoints, comma-separated ("tcp://a:7700,tcp://b:7700"): the
// replicas of one scheduler (docs/RELIABILITY.md, "Replicas"). Spaces
// around each are dropped; empty entries are an error of ValidateEndpoints.
std::vector<std::string> SplitEndpoints(std::string_view list);
// Each entry as ValidateEndpoint; at least one.
Status ValidateEndpoints(std::string_view list);

wire::Error MakeError(wire::Error::Code code, std::string message);

}  // namespace tailcut
