// The client's side of the wire: one ClientReply as Client (client.cpp)
// takes it: errors become a Status, statuses are read for their state.
#include "fuzz_targets.h"
#include "tailcut/client/client.h"
#include "tailcut/wire/wire.h"

namespace tailcut::fuzz {

int ClientReply(const uint8_t* data, size_t size) {
  Quiet();
  wire::ClientReply reply;
  if (!reply.ParseFromArray(data, static_cast<int>(size))) return 0;
  if (reply.has_error()) (void)StatusFromWireError(reply.error()).message();
  if (reply.has_status()) {
    (void)JobStateText(reply.status().state());
    (void)IsTerminal(reply.status().state());
  }
  for (const auto& r : reply.results().results()) (void)r.output().size();
  return 0;
}

}  // namespace tailcut::fuzz
