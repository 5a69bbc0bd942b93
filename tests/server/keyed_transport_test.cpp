// The replica port (scheduler/server/replicas/keyed_transport.h): closed to
// anyone without the replica key. Raw TCP peers speak the handshake with
// the right key, a wrong one, garbage or silence; a replica holding another
// key never joins the group.
#include <poll.h>
#include <sodium.h>
#include <sys/time.h>

#include <cstring>

#include "replica_fixture.h"

namespace tailcut::replica_test {
namespace {

// A blocking loopback connection with a 5 s receive timeout.
class Raw {
 public:
  explicit Raw(const std::string& address) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    timeval tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~Raw() { close(fd_); }
  bool connected() const { return connected_; }
  void Send(const std::string& b) {
    REQUIRE(send(fd_, b.data(), b.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(b.size()));
  }
  // Exactly n bytes, or fewer when the peer closed.
  std::string Recv(size_t n) {
    std::string b(n, '\0');
    size_t got = 0;
    while (got < n) {
      ssize_t r = recv(fd_, b.data() + got, n - got, 0);
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    b.resize(got);
    return b;
  }
  // True when the peer closes the connection within `ms`.
  bool Closed(int ms = 5000) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, ms) != 1) return false;
    char c;
    return recv(fd_, &c, 1, 0) <= 0;  // EOF, or a reset (the peer left our bytes unread)
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

std::string Mac(const std::string& key, const std::string& label, const std::string& nc, const std::string& ns,
                const std::string& tail) {
  std::string m = label + nc + ns + tail;
  unsigned char out[crypto_auth_hmacsha256_BYTES];
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, reinterpret_cast<const unsigned char*>(key.data()), key.size());
  crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>(m.data()), m.size());
  crypto_auth_hmacsha256_final(&st, out);
  return std::string(reinterpret_cast<char*>(out), sizeof out);
}

// Runs the dialer's side with `key`; true when the listener keeps the
// connection open after it (it accepted), false when it closes it.
bool Dial(const std::string& address, const std::string& key, bool* listener_proved_key) {
  REQUIRE(sodium_init() >= 0);
  Raw raw(address);
  REQUIRE(raw.connected());
  std::string nc(32, '\0');
  randombytes_buf(nc.data(), nc.size());
  raw.Send("TCRAFT01" + nc);
  std::string challenge = raw.Recv(64);
  REQUIRE(challenge.size() == 64);
  std::string ns = challenge.substr(0, 32);
  *listener_proved_key = challenge.substr(32) == Mac(Key('k'), "tailcut-raft-listener", nc, ns, "");
  std::string self = "127.0.0.1:1";
  std::string id_part = std::string("\x09\0\0\0\0\0\0\0", 8) + std::string(1, static_cast<char>(self.size())) +
                        std::string(1, '\0') + self;
  raw.Send(id_part + Mac(key, "tailcut-raft-dialer", nc, ns, id_part));
  return !raw.Closed(1500);  // a refusal closes at once
}

TEST_CASE("the replica port refuses peers without the key and accepts one with it") {
  Cluster c(1);
  c.StartAll();
  const std::string address = c[0].options.peers[0].address;
  REQUIRE(c.WaitLeader() == 0);  // a group of one leads itself

  SECTION("garbage") {
    Raw raw(address);
    REQUIRE(raw.connected());
    raw.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(40, 'x'));
    CHECK(raw.Closed());
    REQUIRE(WaitFor([&] { return c[0].refused() == 1; }));
    CHECK(c[0].refusals[0].find("not a tailcut replica") != std::string::npos);
  }
  SECTION("a wrong key") {
    bool proved = false;
    CHECK_FALSE(Dial(address, Key('x'), &proved));
    CHECK(proved);  // the listener proved the real key; the dialer could not
    REQUIRE(WaitFor([&] { return c[0].refused() == 1; }));
    CHECK(c[0].refusals[0].find("no replica key") != std::string::npos);
  }
  SECTION("silence times out") {
    Raw raw(address);
    REQUIRE(raw.connected());
    CHECK(raw.Closed());  // within handshake_timeout_ms (1 s here)
    REQUIRE(WaitFor([&] { return c[0].refused() == 1; }));
    CHECK(c[0].refusals[0].find("timed out") != std::string::npos);
  }
  SECTION("the key") {
    // The same exchange with the right key is handed to Raft: not closed
    // by the handshake, nothing refused.
    bool proved = false;
    CHECK(Dial(address, Key('k'), &proved));
    CHECK(proved);
    CHECK(c[0].refused() == 0);
  }
}

TEST_CASE("unfinished handshakes on the replica port are capped") {
  Cluster c(1);
  c[0].options.max_handshakes = 4;
  c[0].options.handshake_timeout_ms = 3000;
  c.StartAll();
  REQUIRE(c.WaitLeader() == 0);
  std::vector<std::unique_ptr<Raw>> silent;
  for (int i = 0; i < 10; ++i) {
    silent.push_back(std::make_unique<Raw>(c[0].options.peers[0].address));
    REQUIRE(silent.back()->connected());
  }
  // Six beyond the cap are closed at once, long before the handshake timeout.
  CHECK(WaitFor([&] { return c[0].refused() == 6; }, 2));
  int closed = 0;
  for (auto& r : silent) closed += r->Closed(100) ? 1 : 0;
  CHECK(closed == 6);
  {
    std::lock_guard<std::mutex> l(c[0].refusals_mu);
    for (const std::string& why : c[0].refusals)
      CHECK(why.find("4 handshakes unfinished already") != std::string::npos);
  }
  // The four held are timed out in their turn.
  CHECK(WaitFor([&] { return c[0].refused() == 10; }, 6));
}

TEST_CASE("a replica holding another key never joins the group") {
  Cluster c(3, {Key('k'), Key('k'), Key('x')});
  c.StartAll();
  int leader = c.WaitLeader();
  REQUIRE(leader >= 0);
  REQUIRE(leader != 2);
  REQUIRE(c.Commit(static_cast<size_t>(leader), 1, 5) == 5);
  CHECK(WaitFor([&] { return c[0].machine->applied() == 5 && c[1].machine->applied() == 5; }));
  CHECK(c[2].machine->applied() == 0);
  CHECK_FALSE(c[2].group->is_leader());
  // Both sides log the refusals: the keyed replicas refuse its dials, it
  // refuses theirs.
  CHECK(WaitFor([&] { return c[0].refused() + c[1].refused() > 0 && c[2].refused() > 0; }));
}

}  // namespace
}  // namespace tailcut::replica_test
