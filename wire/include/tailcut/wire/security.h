// Who may talk to the scheduler: CURVE keys (libzmq + libsodium do the
// cryptography), the allow-list of trusted public keys, the ZAP handler the
// scheduler answers from its own loop, and the rule that without keys the
// daemons listen on loopback only. docs/SECURITY.md has the threat model.
//
// Key files are TOML, written by `tailcut keygen NAME --role ROLE`:
//   NAME.key  (mode 0600)  [[key]] name, role, public, secret
//   NAME.pub               [[key]] name, role, public
// A .pub file is a ready entry of a trusted-keys file (`cat *.pub >> trusted.toml`).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <zmq.hpp>

#include "tailcut/common/status.h"

namespace tailcut {

// What a trusted key may do: clients submit and manage their own jobs,
// admins any job, executors run tasks (and nothing on the client socket).
enum class PeerRole { kClient, kExecutor, kAdmin };
const char* PeerRoleName(PeerRole r);

struct KeyPair {
  std::string name;
  PeerRole role = PeerRole::kClient;
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters; empty in a .pub file
};

StatusOr<KeyPair> GenerateKeyPair(std::string name, PeerRole role);
// The text of a .pub file: one [[key]] entry of a trusted-keys file.
std::string PublicKeyEntry(const KeyPair& key);
// Writes PREFIX.key (mode 0600) and PREFIX.pub; refuses to overwrite.
Status WriteKeyFiles(const std::string& prefix, const KeyPair& key);
// The first [[key]] of a .key file, which must hold the secret half.
StatusOr<KeyPair> LoadKeyPair(const std::string& path);
// A Z85 public key given as itself, or read from a .pub or .key file.
StatusOr<std::string> LoadPublicKey(const std::string& path_or_z85);
StatusOr<PeerRole> ParsePeerRole(std::string_view text);

struct TrustedKey {
  std::string name;
  PeerRole role = PeerRole::kClient;
};
// The allow-list: public key -> who. A file of [[key]] entries (name, role,
// public); an entry with a secret is refused, so a private key is never
// copied into it by mistake.
using TrustedKeys = std::map<std::string, TrustedKey, std::less<>>;
StatusOr<TrustedKeys> LoadTrustedKeys(const std::string& path);

// An executor's or a client's side: encrypt, authenticate with `own`, and
// accept only the scheduler holding `scheduler_public_key`.
void ApplyCurveClient(zmq::socket_t& socket, const KeyPair& own, const std::string& scheduler_public_key);

// Keys of a peer (executor or client) as its options name them: both empty
// = no keys; otherwise both must load.
struct PeerKeys {
  std::string key_file;       // this peer's .key file
  std::string scheduler_key;  // the scheduler's public key: a .pub file or Z85
  bool enabled() const { return !key_file.empty() || !scheduler_key.empty(); }
};
// Applies `keys` to `socket` (nothing when !keys.enabled()).
Status ApplyPeerKeys(zmq::socket_t& socket, const PeerKeys& keys);

// One event of a libzmq socket monitor (zmq_socket_monitor): its id
// (ZMQ_EVENT_*), its value (a descriptor or an errno) and the endpoint.
struct MonitorEvent {
  uint16_t id = 0;
  uint32_t value = 0;
  std::string endpoint;
};
// Takes the next event from a monitor's PAIR socket without waiting;
// false when none is queued.
bool TakeMonitorEvent(zmq::socket_t& monitor, MonitorEvent* out);

// Not thread-safe: used by the thread that owns `socket`.
// Why connections of `socket` fail their handshake, from libzmq's socket
// monitor; "" while nothing failed. For a clear error instead of silence.
// Only what the failure shows is said: the scheduler refused the key, or
// speaks another mechanism (it wants keys, or uses none), is `definitive`.
// A connection closed before its handshake finished says nothing alone
// (a scheduler restarting, shedding strangers, or out of descriptors; a
// keyed peer with the wrong scheduler key looks the same): only
// kClosedStreak of them in a row with no handshake finished between are
// reported, as what they may mean, and not definitive.
class HandshakeMonitor {
 public:
  static constexpr int kClosedStreak = 3;
  // `with_keys`: whether `socket` holds keys (for what to suggest).
  HandshakeMonitor(zmq::context_t& ctx, zmq::socket_t& socket, bool with_keys);
  std::string TakeFailure(bool* definitive = nullptr);

 private:
  zmq::socket_t events_;
  bool with_keys_;
  int closed_in_a_row_ = 0;
};

// tcp://127.x.x.x, tcp://[::1], tcp://localhost, ipc:// and inproc:// are
// reachable from this machine only.
bool IsLocalOnlyEndpoint(std::string_view endpoint);

// The scheduler's side. Not thread-safe, like the ZeroMQ sockets it polls:
// it belongs to the thread of the loop that owns them. Serves ZAP (RFC 27) on inproc://zeromq.zap.01 of
// `ctx`; the owner polls socket() and calls HandleRequests(). Sockets whose
// ZAP domain is kExecutorDomain admit executor keys, kClientDomain client
// and admin keys. The ZAP user id is the peer's public key, so each
// message says who sent it (Peer()).
class ZapAuthenticator {
 public:
  static constexpr const char* kExecutorDomain = "tailcut-executors";
  static constexpr const char* kClientDomain = "tailcut-clients";

  explicit ZapAuthenticator(zmq::context_t& ctx);
  void SetTrusted(TrustedKeys keys) { trusted_ = std::move(keys); }
  size_t trusted_count() const { return trusted_.size(); }
  zmq::socket_t& socket() { return socket_; }
  // Answers every pending handshake; never blocks.
  void HandleRequests();
  // The trusted key that sent `msg` (a frame received on a CURVE socket
  // served by this handler); nullptr if none, or if it is no longer trusted
  // (a key removed from the allow-list and reloaded is refused at once).
  const TrustedKey* Peer(const zmq::message_t& msg, std::string* public_key = nullptr) const;
  uint64_t refused() const { return refused_; }

 private:
  zmq::socket_t socket_;
  TrustedKeys trusted_;
  uint64_t refused_ = 0;
};

}  // namespace tailcut
