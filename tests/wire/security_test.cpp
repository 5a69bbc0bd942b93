// Key files, the allow-list, and the ZAP handler with real CURVE sockets.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tailcut/wire/security.h"

using namespace tailcut;

namespace {

struct TempDir {
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "tailcut-keys-XXXXXX").string();
    REQUIRE(mkdtemp(t.data()));
    path = t;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

KeyPair Written(const std::string& dir, const std::string& name, PeerRole role) {
  auto k = GenerateKeyPair(name, role);
  REQUIRE(k.ok());
  REQUIRE(WriteKeyFiles(dir + "/" + name, *k).ok());
  return *k;
}

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST_CASE("keys: keygen files load back and the secret half is private") {
  TempDir d;
  KeyPair k = Written(d.path, "alice", PeerRole::kAdmin);
  CHECK(k.public_key.size() == 40);
  auto back = LoadKeyPair(d.path + "/alice.key");
  REQUIRE(back.ok());
  CHECK(back->public_key == k.public_key);
  CHECK(back->secret_key == k.secret_key);
  CHECK(back->role == PeerRole::kAdmin);
  struct stat st {};
  REQUIRE(stat((d.path + "/alice.key").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  // A public key comes from a .pub, a .key, or as itself.
  CHECK(*LoadPublicKey(d.path + "/alice.pub") == k.public_key);
  CHECK(*LoadPublicKey(d.path + "/alice.key") == k.public_key);
  CHECK(*LoadPublicKey(k.public_key) == k.public_key);
  // A .pub has no secret: it is not a key pair.
  CHECK_FALSE(LoadKeyPair(d.path + "/alice.pub").ok());
  // Never overwritten.
  CHECK_FALSE(WriteKeyFiles(d.path + "/alice", k).ok());
}

TEST_CASE("keys: a trusted-keys file is the .pub files put together, and nothing else") {
  TempDir d;
  KeyPair a = Written(d.path, "a", PeerRole::kClient);
  KeyPair e = Written(d.path, "e", PeerRole::kExecutor);
  WriteText(d.path + "/trusted.toml", PublicKeyEntry(a) + PublicKeyEntry(e));
  auto t = LoadTrustedKeys(d.path + "/trusted.toml");
  REQUIRE(t.ok());
  REQUIRE(t->size() == 2);
  CHECK(t->at(a.public_key).name == "a");
  CHECK(t->at(e.public_key).role == PeerRole::kExecutor);

  WriteText(d.path + "/secret.toml", PublicKeyEntry(a) + "secret = \"" + a.secret_key + "\"\n");
  auto secret = LoadTrustedKeys(d.path + "/secret.toml");
  REQUIRE_FALSE(secret.ok());
  CHECK_THAT(secret.status().message(), Catch::Contains("private key does not belong"));

  WriteText(d.path + "/twice.toml", PublicKeyEntry(a) + PublicKeyEntry(a));
  CHECK_THAT(LoadTrustedKeys(d.path + "/twice.toml").status().message(), Catch::Contains("listed twice"));

  WriteText(d.path + "/role.toml", "[[key]]\nname = \"x\"\nrole = \"root\"\npublic = \"" + a.public_key + "\"\n");
  CHECK_THAT(LoadTrustedKeys(d.path + "/role.toml").status().message(), Catch::Contains("role must be"));

  WriteText(d.path + "/short.toml", "[[key]]\nname = \"x\"\npublic = \"abc\"\n");
  CHECK_THAT(LoadTrustedKeys(d.path + "/short.toml").status().message(), Catch::Contains("Z85"));

  WriteText(d.path + "/typo.toml", PublicKeyEntry(a) + "rolle = \"admin\"\n");
  CHECK_THAT(LoadTrustedKeys(d.path + "/typo.toml").status().message(), Catch::Contains("rolle"));
}

TEST_CASE("keys: only loopback, ipc and inproc count as this machine only") {
  for (const char* ep : {"tcp://127.0.0.1:7700", "tcp://127.1.2.3:*", "tcp://localhost:1", "tcp://[::1]:5",
                         "ipc:///tmp/x", "inproc://y"})
    CHECK(IsLocalOnlyEndpoint(ep));
  for (const char* ep : {"tcp://*:7700", "tcp://0.0.0.0:7700", "tcp://10.0.0.1:7700", "tcp://eth0:7700",
                         "tcp://128.0.0.1:1", "tcp://[::]:1"})
    CHECK_FALSE(IsLocalOnlyEndpoint(ep));
}

// A CURVE ROUTER answered by a ZapAuthenticator, as the scheduler runs it.
struct CurveServer {
  explicit CurveServer(const char* domain) : auth(ctx), router(ctx, zmq::socket_type::router) {
    auto k = GenerateKeyPair("scheduler", PeerRole::kAdmin);
    key = *k;
    router.set(zmq::sockopt::linger, 0);
    router.set(zmq::sockopt::zap_domain, domain);
    router.set(zmq::sockopt::curve_server, true);
    router.set(zmq::sockopt::curve_secretkey, key.secret_key);
    router.bind("tcp://127.0.0.1:*");
    endpoint = router.get(zmq::sockopt::last_endpoint);
  }
  // Serves ZAP and returns the payload of the first message within ~3 s.
  bool Receive(zmq::message_t* payload) {
    for (int i = 0; i < 300; ++i) {
      zmq::pollitem_t items[] = {{router.handle(), 0, ZMQ_POLLIN, 0}, {auth.socket().handle(), 0, ZMQ_POLLIN, 0}};
      zmq::poll(items, 2, std::chrono::milliseconds(10));
      if (items[1].revents & ZMQ_POLLIN) auth.HandleRequests();
      zmq::message_t id;
      if ((items[0].revents & ZMQ_POLLIN) && router.recv(id, zmq::recv_flags::dontwait)) {
        (void)router.recv(*payload, zmq::recv_flags::none);
        return true;
      }
    }
    return false;
  }
  zmq::context_t ctx;
  ZapAuthenticator auth;
  zmq::socket_t router;
  KeyPair key;
  std::string endpoint;
};

struct CurveClient {
  CurveClient(CurveServer& s, const KeyPair& own, const std::string& server_key)
      : sock(ctx, zmq::socket_type::dealer), monitor(ctx, sock, true) {
    sock.set(zmq::sockopt::linger, 0);
    ApplyCurveClient(sock, own, server_key);
    sock.connect(s.endpoint);
    sock.send(zmq::str_buffer("hello"), zmq::send_flags::dontwait);
  }
  // The monitor's complaint, within ~3 s.
  std::string Failure() {
    for (int i = 0; i < 300; ++i) {
      if (std::string why = monitor.TakeFailure(); !why.empty()) return why;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return "";
  }
  zmq::context_t ctx;
  zmq::socket_t sock;
  HandshakeMonitor monitor;
};

TEST_CASE("zap: a trusted key gets through and each message names it, others are refused") {
  CurveServer server(ZapAuthenticator::kClientDomain);
  KeyPair alice = *GenerateKeyPair("alice", PeerRole::kClient);
  KeyPair exec = *GenerateKeyPair("exec", PeerRole::kExecutor);
  KeyPair stranger = *GenerateKeyPair("stranger", PeerRole::kClient);
  server.auth.SetTrusted({{alice.public_key, {"alice", PeerRole::kClient}}, {exec.public_key, {"exec", PeerRole::kExecutor}}});

  CurveClient ok(server, alice, server.key.public_key);
  zmq::message_t payload;
  REQUIRE(server.Receive(&payload));
  CHECK(payload.to_string() == "hello");
  std::string who;
  const TrustedKey* peer = server.auth.Peer(payload, &who);
  REQUIRE(peer);
  CHECK(peer->name == "alice");
  CHECK(who == alice.public_key);

  // Revoked: its open connection's messages no longer name a trusted key.
  server.auth.SetTrusted({});
  CHECK(server.auth.Peer(payload) == nullptr);
  server.auth.SetTrusted({{alice.public_key, {"alice", PeerRole::kClient}}, {exec.public_key, {"exec", PeerRole::kExecutor}}});

  SECTION("an unknown key") {
    CurveClient bad(server, stranger, server.key.public_key);
    CHECK_FALSE(server.Receive(&payload));
    CHECK_THAT(bad.Failure(), Catch::Contains("refused this key"));
    CHECK(server.auth.refused() == 1);
  }
  SECTION("an executor key on the client socket") {
    CurveClient bad(server, exec, server.key.public_key);
    CHECK_FALSE(server.Receive(&payload));
    CHECK_THAT(bad.Failure(), Catch::Contains("refused this key"));
    CHECK(server.auth.refused() == 1);
  }
  SECTION("a client that expects another scheduler's key") {
    CurveClient bad(server, alice, stranger.public_key);
    CHECK_FALSE(server.Receive(&payload));
    CHECK_THAT(bad.Failure(), Catch::Contains("does not hold the scheduler key"));
  }
}

namespace {

// A keyless DEALER's handshake monitor, connected to `endpoint`; Failure()
// is the monitor's first definitive report within ~3 s, else its last
// report ("" when none), and whether it was definitive. (A CURVE server
// often closes a keyless connection before its greeting names the
// mechanism: a try says "wants keys" for certain only now and then.)
struct KeylessClient {
  explicit KeylessClient(const std::string& endpoint) : sock(ctx, zmq::socket_type::dealer), monitor(ctx, sock, false) {
    sock.set(zmq::sockopt::linger, 0);
    sock.connect(endpoint);
  }
  std::string Failure(bool* definitive) {
    std::string last;
    for (int i = 0; i < 300; ++i) {
      if (std::string why = monitor.TakeFailure(definitive); !why.empty()) {
        if (*definitive) return why;
        last = why;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    *definitive = false;
    return last;
  }
  zmq::context_t ctx;
  zmq::socket_t sock;
  HandshakeMonitor monitor;
};

}  // namespace

TEST_CASE("handshake monitor: a keyless peer hears 'wants keys' only from a scheduler that speaks CURVE") {
  SECTION("a CURVE server: definitive") {
    CurveServer server(ZapAuthenticator::kClientDomain);
    KeylessClient c(server.endpoint);
    bool definitive = false;
    CHECK_THAT(c.Failure(&definitive), Catch::Contains("wants keys"));
    CHECK(definitive);
  }
  SECTION("a keyless server that closes every connection before the handshake ends (out of descriptors)") {
    // A bare listener that accepts and closes at once: what a scheduler
    // shedding strangers, turning a backlog away or restarting looks like.
    zmq::context_t ctx;
    zmq::socket_t stream(ctx, zmq::socket_type::stream);  // sees each connection, closes it
    stream.bind("tcp://127.0.0.1:*");
    const std::string endpoint = stream.get(zmq::sockopt::last_endpoint);
    std::atomic<bool> stop{false};
    std::thread closer([&] {
      while (!stop) {
        zmq::message_t id, data;
        if (!stream.recv(id, zmq::recv_flags::dontwait)) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          continue;
        }
        (void)stream.recv(data, zmq::recv_flags::none);
        stream.send(id, zmq::send_flags::sndmore);
        stream.send(zmq::message_t(), zmq::send_flags::none);  // an empty frame closes that connection
      }
    });
    KeylessClient c(endpoint);
    bool definitive = true;
    const std::string why = c.Failure(&definitive);
    stop = true;
    closer.join();
    CHECK_THAT(why, Catch::Contains("closed before it finished"));
    CHECK_THAT(why, !Catch::Contains("wants keys"));
    CHECK_FALSE(definitive);  // a client keeps trying: the scheduler may be back in a moment
  }
}
