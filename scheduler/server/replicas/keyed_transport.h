// libraft's connections between replicas, closed to anyone without the
// replica key (docs/RELIABILITY.md, "Replicas: the replica port").
//
// A `raft_uv_transport` of our own over libuv TCP, in place of libraft's
// raft_uv_tcp_init (plain TCP, and it parses a stranger's handshake, length
// fields included, before anything is authenticated). Every connection
// first passes a mutual challenge-response on the shared key, before any
// byte reaches libraft:
//   dialer   -> listener  "TCRAFT01" | Nc (32 random bytes)
//   listener -> dialer    Ns (32) | HMAC-SHA-256(K, "tailcut-raft-listener" | Nc | Ns)
//   dialer   -> listener  id (u64 LE) | address length (u16 LE) | address |
//                         HMAC-SHA-256(K, "tailcut-raft-dialer" | Nc | Ns | id | length | address)
// Both sides prove the key on fresh nonces (no replay), the labels differ
// (no reflection), and the dialer's Raft id and address are under its MAC.
// The stream after it is not encrypted: run replicas on a private network
// (docs/DEPLOY.md). A refused or timed-out peer is logged and closed;
// unfinished handshakes are capped and timed out.
//
// After the handshake the stream is libraft's, but tailcut still reads
// every message's header first (raft_message_guard.h): a malformed header,
// an unknown type or a length over `limits` is logged and the connection
// closed before libraft allocates or decodes it, and a message whose term
// is far ahead of ours is logged with what Raft made of it.
//
// Runs on the libuv loop it is given (the replica thread's); not
// thread-safe.
#pragma once

extern "C" {  // libraft's headers have no C++ guards
#include <raft.h>
#include <raft/uv.h>
}

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "raft_message_guard.h"

namespace tailcut {

struct KeyedTransportOptions {
  std::string key;                       // exactly 32 bytes (raw); the same on every replica
  std::string bind_address;              // "ip:port" to listen on; empty: this replica's Raft address
  unsigned handshake_timeout_ms = 3000;  // connect + challenge-response, either side
  unsigned max_handshakes = 32;          // unfinished incoming handshakes at once; more are closed
  // The group's other replicas' Raft ids: a keyed dialer claiming any other
  // id (this replica's own included) is refused. Empty: every dialer is.
  std::vector<uint64_t> members;
  // What a member may send (raft_message_guard.h); a message over them is
  // refused and its connection closed.
  RaftMessageLimits limits;
  // A message whose term is more than this ahead of ours is logged, with
  // whether Raft adopted the term or refused it. Needs `current_term`.
  uint64_t term_jump_to_log = 64;
  std::function<uint64_t()> current_term;  // Raft's, on the loop's thread; empty: no term check
  // Each refused or failed incoming handshake, refused message and far
  // future term (what, the peer's id and address), on the loop's thread.
  // Empty: logged at WARN, at most one line a second per peer (and one for
  // peers that have not proved the key).
  std::function<void(const std::string& why)> on_refused;
};

constexpr size_t kReplicaKeyBytes = 32;

// Sets up `t` (its impl owned until KeyedTransportRelease). Raft then calls
// its init/listen/connect/close.
int KeyedTransportInit(raft_uv_transport* t, uv_loop_t* loop, const KeyedTransportOptions& options);
// Frees `t`'s impl, after its close callback has fired (or if Raft never used it).
void KeyedTransportRelease(raft_uv_transport* t);

}  // namespace tailcut
