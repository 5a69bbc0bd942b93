#include "tailcut/wire/security.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "tailcut/common/config.h"
#include "tailcut/common/log.h"

namespace tailcut {

namespace {

constexpr size_t kZ85KeyLength = 40;

bool IsZ85Key(std::string_view s) {
  if (s.size() != kZ85KeyLength) return false;
  uint8_t binary[32];
  return zmq_z85_decode(binary, std::string(s).c_str()) != nullptr;
}

std::string KeyEntry(const KeyPair& k, bool with_secret) {
  std::string s = "[[key]]\nname = " + TomlQuote(k.name) + "\nrole = \"" + PeerRoleName(k.role) +
                  "\"\npublic = \"" + k.public_key + "\"\n";
  if (with_secret) s += "secret = \"" + k.secret_key + "\"\n";
  return s;
}

Status WriteNewFile(const std::string& path, const std::string& text, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, mode);
  if (fd < 0) return Status::IoError("cannot create " + path + ": " + std::strerror(errno));
  ssize_t n = ::write(fd, text.data(), text.size());
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) return Status::IoError("cannot write " + path);
  return Status::Ok();
}

// Reads every [[key]] entry of a key file; `secrets`: whether entries must
// (true), must not (false) carry the secret half.
StatusOr<std::vector<KeyPair>> ReadKeyEntries(const std::string& path, bool secrets) {
  auto cfg = Config::LoadFile(path);
  if (!cfg.ok()) return cfg.status();
  std::vector<KeyPair> keys;
  for (size_t i = 0; i < cfg->ArraySize("key"); ++i) {
    KeyPair k;
    std::string role = "client";
    TableReader t(*cfg, "key." + std::to_string(i));
    t.Get("name", &k.name).Get("role", &role).Get("public", &k.public_key).Get("secret", &k.secret_key);
    auto parsed = ParsePeerRole(role);
    t.Also(parsed.status())
        .Check(IsZ85Key(k.public_key), "public must be a 40-character Z85 key")
        .Check(secrets ? IsZ85Key(k.secret_key) : k.secret_key.empty(),
               secrets ? "secret must be a 40-character Z85 key"
                       : "secret: a private key does not belong in a list of public keys");
    if (!t.status().ok()) return Status::InvalidArgument(path + ": " + t.status().message());
    k.role = *parsed;
    keys.push_back(std::move(k));
  }
  if (Status s = cfg->CheckAllUsed(); !s.ok()) return s;
  return keys;
}

}  // namespace

const char* PeerRoleName(PeerRole r) {
  switch (r) {
    case PeerRole::kExecutor: return "executor";
    case PeerRole::kAdmin: return "admin";
    default: return "client";
  }
}

StatusOr<PeerRole> ParsePeerRole(std::string_view text) {
  for (PeerRole r : {PeerRole::kClient, PeerRole::kExecutor, PeerRole::kAdmin})
    if (text == PeerRoleName(r)) return r;
  return Status::InvalidArgument("role must be client, executor or admin, got '" + std::string(text) + "'");
}

std::string PublicKeyEntry(const KeyPair& key) { return KeyEntry(key, false); }

StatusOr<KeyPair> GenerateKeyPair(std::string name, PeerRole role) {
  char pub[kZ85KeyLength + 1], sec[kZ85KeyLength + 1];
  if (zmq_curve_keypair(pub, sec) != 0)
    return Status::Unavailable("this libzmq cannot make CURVE keys (built without libsodium?)");
  return KeyPair{std::move(name), role, pub, sec};
}

Status WriteKeyFiles(const std::string& prefix, const KeyPair& key) {
  std::string header = "# tailcut key '" + key.name + "', made by `tailcut keygen`.\n";
  if (Status s = WriteNewFile(prefix + ".key",
                              header + "# SECRET: keep this file private; give others the .pub file.\n" +
                                  KeyEntry(key, true),
                              0600);
      !s.ok())
    return s;
  return WriteNewFile(prefix + ".pub",
                      header + "# Public: append to the scheduler's trusted_keys file to admit it.\n" +
                          KeyEntry(key, false),
                      0644);
}

StatusOr<KeyPair> LoadKeyPair(const std::string& path) {
  auto keys = ReadKeyEntries(path, true);
  if (!keys.ok()) return keys.status();
  if (keys->size() != 1) return Status::InvalidArgument(path + ": a key file holds exactly one [[key]]");
  return keys->front();
}

StatusOr<std::string> LoadPublicKey(const std::string& path_or_z85) {
  if (IsZ85Key(path_or_z85)) return path_or_z85;
  auto cfg = Config::LoadFile(path_or_z85);
  if (!cfg.ok()) return cfg.status();
  std::string pub;
  if (Status s = cfg->Get("key.0.public", &pub); !s.ok()) return s;
  if (!IsZ85Key(pub)) return Status::InvalidArgument(path_or_z85 + ": no [[key]] with a 40-character Z85 public key");
  return pub;
}

StatusOr<TrustedKeys> LoadTrustedKeys(const std::string& path) {
  auto keys = ReadKeyEntries(path, false);
  if (!keys.ok()) return keys.status();
  TrustedKeys out;
  for (auto& k : *keys)
    if (!out.emplace(k.public_key, TrustedKey{k.name, k.role}).second)
      return Status::InvalidArgument(path + ": key '" + k.name + "' is listed twice");
  return out;
}

void ApplyCurveClient(zmq::socket_t& socket, const KeyPair& own, const std::string& scheduler_public_key) {
  socket.set(zmq::sockopt::curve_serverkey, scheduler_public_key);
  socket.set(zmq::sockopt::curve_publickey, own.public_key);
  socket.set(zmq::sockopt::curve_secretkey, own.secret_key);
}

Status ApplyPeerKeys(zmq::socket_t& socket, const PeerKeys& keys) {
  if (!keys.enabled()) return Status::Ok();
  if (keys.key_file.empty() || keys.scheduler_key.empty())
    return Status::InvalidArgument(
        "keys: set both --key-file (this peer's .key) and --scheduler-key (the scheduler's .pub), or neither "
        "(config key_file, scheduler_key; the tailcut CLI also reads TAILCUT_KEY_FILE, TAILCUT_SCHEDULER_KEY)");
  auto own = LoadKeyPair(keys.key_file);
  if (!own.ok()) return own.status();
  auto server = LoadPublicKey(keys.scheduler_key);
  if (!server.ok()) return server.status();
  ApplyCurveClient(socket, *own, *server);
  return Status::Ok();
}

HandshakeMonitor::HandshakeMonitor(zmq::context_t& ctx, zmq::socket_t& socket, bool with_keys)
    : events_(ctx, zmq::socket_type::pair), with_keys_(with_keys) {
  std::string address = "inproc://tailcut-handshake-" + std::to_string(reinterpret_cast<uintptr_t>(&socket));
  zmq_socket_monitor(socket.handle(), address.c_str(),
                     ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                         ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
  events_.set(zmq::sockopt::linger, 0);
  events_.connect(address);
}

bool TakeMonitorEvent(zmq::socket_t& monitor, MonitorEvent* out) {
  zmq::message_t event, endpoint;
  // Each event: 6 bytes (uint16 event, uint32 value), then the endpoint.
  while (monitor.recv(event, zmq::recv_flags::dontwait)) {
    if (event.more()) (void)monitor.recv(endpoint, zmq::recv_flags::none);
    if (event.size() < 6) continue;
    std::memcpy(&out->id, event.data(), sizeof out->id);
    std::memcpy(&out->value, static_cast<const char*>(event.data()) + 2, sizeof out->value);
    out->endpoint = endpoint.to_string();
    return true;
  }
  return false;
}

std::string HandshakeMonitor::TakeFailure(bool* definitive) {
  std::string why;
  bool sure = false;
  MonitorEvent e;
  while (TakeMonitorEvent(events_, &e)) {
    const std::string& at = e.endpoint;
    if (e.id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
      closed_in_a_row_ = 0;
    } else if (e.id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
      why = "the scheduler at " + at + " refused this key (not in its trusted_keys, or the wrong role)", sure = true;
    } else if (e.id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL && e.value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH) {
      why = with_keys_
                ? "the scheduler at " + at +
                      " does not use keys: unset --key-file and --scheduler-key (TAILCUT_KEY_FILE, "
                      "TAILCUT_SCHEDULER_KEY for the tailcut CLI; config key_file, scheduler_key), or give it keys"
                : "the scheduler at " + at +
                      " wants keys: set --key-file and --scheduler-key (the tailcut CLI also reads "
                      "TAILCUT_KEY_FILE and TAILCUT_SCHEDULER_KEY; config key_file, scheduler_key; docs/SECURITY.md)";
      sure = true;
    } else if (e.id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL && with_keys_) {
      why = "the handshake with " + at + " failed: it does not hold the scheduler key configured here", sure = true;
    } else if (++closed_in_a_row_ >= kClosedStreak) {
      why = "the handshake with " + at + " failed " + std::to_string(closed_in_a_row_) +
            " times in a row, the connection closed before it finished: " +
            (with_keys_ ? "it does not hold the scheduler key configured here, or it " : "the scheduler ") +
            "is restarting, turning strangers away, or out of descriptors" +
            (with_keys_ ? ""
                        : " (if it uses keys, a later try says so: one with keys often closes a keyless "
                          "connection before its greeting names them)");
      sure = false;
    }
  }
  if (definitive) *definitive = sure;
  return why;
}

bool IsLocalOnlyEndpoint(std::string_view ep) {
  if (ep.rfind("ipc://", 0) == 0 || ep.rfind("inproc://", 0) == 0) return true;
  if (ep.rfind("tcp://", 0) != 0) return false;
  std::string_view host = ep.substr(6, ep.rfind(':') - 6);
  return host.rfind("127.", 0) == 0 || host == "localhost" || host == "[::1]" || host == "::1";
}

ZapAuthenticator::ZapAuthenticator(zmq::context_t& ctx) : socket_(ctx, zmq::socket_type::rep) {
  socket_.set(zmq::sockopt::linger, 0);
  socket_.bind("inproc://zeromq.zap.01");
}

void ZapAuthenticator::HandleRequests() {
  for (;;) {
    // A request: version, request id, domain, address, routing id,
    // mechanism, then the mechanism's credentials (CURVE: the client key).
    std::vector<zmq::message_t> frames;
    zmq::message_t f;
    if (!socket_.recv(f, zmq::recv_flags::dontwait)) return;
    frames.push_back(std::move(f));
    while (frames.back().more()) {
      zmq::message_t next;
      (void)socket_.recv(next, zmq::recv_flags::none);  // parts of one message arrive together
      frames.push_back(std::move(next));
    }
    std::string code = "400", text = "not a trusted key", user;
    if (frames.size() >= 7 && frames[5].to_string_view() == "CURVE" && frames[6].size() == 32) {
      char z85[kZ85KeyLength + 1];
      zmq_z85_encode(z85, static_cast<const uint8_t*>(frames[6].data()), 32);
      auto it = trusted_.find(std::string_view(z85));
      std::string_view domain = frames[2].to_string_view();
      bool admitted = it != trusted_.end() &&
                      (domain == kExecutorDomain ? it->second.role == PeerRole::kExecutor
                                                 : it->second.role != PeerRole::kExecutor);
      if (admitted) {
        code = "200", text = "OK", user = z85;
      } else {
        ++refused_;
        TC_LOG(Warn) << "refused a connection from " << (frames[3].empty() ? "?" : frames[3].to_string())
                     << " on " << domain << ": "
                     << (it == trusted_.end() ? "key " + std::string(z85, 8) + "... is not trusted"
                                              : "key '" + it->second.name + "' has role " +
                                                    PeerRoleName(it->second.role));
      }
    } else {
      ++refused_;
      TC_LOG(Warn) << "refused a connection without a CURVE key";
    }
    std::string version = frames.empty() ? "1.0" : frames[0].to_string();
    std::string request_id = frames.size() > 1 ? frames[1].to_string() : "";
    const std::string* reply[] = {&version, &request_id, &code, &text, &user};
    for (const std::string* part : reply) socket_.send(zmq::buffer(*part), zmq::send_flags::sndmore);
    socket_.send(zmq::message_t(), zmq::send_flags::none);  // metadata: none
  }
}

const TrustedKey* ZapAuthenticator::Peer(const zmq::message_t& msg, std::string* public_key) const {
  const char* user = zmq_msg_gets(msg.handle(), "User-Id");
  if (!user) return nullptr;
  auto it = trusted_.find(std::string_view(user));
  if (it == trusted_.end()) return nullptr;
  if (public_key) *public_key = user;
  return &it->second;
}

}  // namespace tailcut
