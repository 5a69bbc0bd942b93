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

std::vector<std::string> SplitEndpoints(std::string_view list) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= list.size()) {
    size_t comma = list.find(',', at);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view one = list.substr(at, comma - at);
    while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
    while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
    out.emplace_back(one);
    at = comma + 1;
  }
  return out;
}

Status ValidateEndpoints(std::string_view list) {
  for (const std::string& ep : SplitEndpoints(list)) {
    if (ep.empty()) return Status::InvalidArgument("endpoints '" + std::string(list) + "': an empty entry");
    if (Status s = ValidateEndpoint(ep); !s.ok()) return s;
  }
  return Status::Ok();
}

wire::Error MakeError(wire::Error::Code code, std::string message) {
  wire::Error e;
  e.set_code(code);
  e.set_message(std::move(message));
  return e;
}

}  // namespace tailcut
