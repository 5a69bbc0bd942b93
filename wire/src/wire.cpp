#include "tailcut/wire/wire.h"

namespace tailcut {

zmq::message_t ToFrame(const google::protobuf::MessageLite& msg) {
  zmq::message_t frame(msg.ByteSizeLong());
  msg.SerializeWithCachedSizesToArray(static_cast<uint8_t*>(frame.data()));
  return frame;
}

bool FromFrame(const zmq::message_t& frame, google::protobuf::MessageLite* msg) {
  return msg->ParseFromArray(frame.data(), static_cast<int>(frame.size()));
}

Status ValidateEndpoint(std::string_view ep) {
  auto bad = [&](const char* why) {
    return Status::InvalidArgument("endpoint '" + std::string(ep) + "': " + why +
                                   " (expected tcp://HOST:PORT, ipc://PATH or inproc://NAME)");
  };
  if (ep.rfind("ipc://", 0) == 0 || ep.rfind("inproc://", 0) == 0) {
    return ep.find("://") + 3 < ep.size() ? Status::Ok() : bad("empty path");
  }
  if (ep.rfind("tcp://", 0) != 0) return bad("unknown transport");
  auto rest = ep.substr(6);
  auto colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return bad("missing host or port");
  auto port = rest.substr(colon + 1);
  if (port == "*") return Status::Ok();
  if (port.empty() || port.size() > 5) return bad("bad port");
  for (char c : port)
    if (c < '0' || c > '9') return bad("bad port");
  if (std::stoi(std::string(port)) > 65535) return bad("port above 65535");
  return Status::Ok();
}

wire::Error MakeError(wire::Error::Code code, std::string message) {
  wire::Error e;
  e.set_code(code);
  e.set_message(std::move(message));
  return e;
}

}  // namespace tailcut
