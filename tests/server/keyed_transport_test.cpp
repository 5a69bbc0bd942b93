// The replica port (scheduler/server/replicas/keyed_transport.h): closed to
// anyone without the replica key. Raw TCP peers speak the handshake with
// the right key, a wrong one, garbage or silence; a replica holding another
// key never joins the group; a keyed peer claiming an id outside the group is
// refused, one claiming a member's is Raft's to judge, after tailcut's guard
// (raft_message_guard.h) has refused and logged what libraft should not read.
#include <poll.h>
#include <sodium.h>
#include <sys/time.h>

#include <cstring>

#include "keyed_transport.h"  // libraft's message types
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

// Runs the dialer's side with `key`, claiming Raft id `id` at `self`; the
// connection, whatever the listener made of it.
std::unique_ptr<Raw> Handshake(const std::string& address, const std::string& key, bool* listener_proved_key,
                               uint64_t id = 9, const std::string& self = "127.0.0.1:1") {
  REQUIRE(sodium_init() >= 0);
  auto raw = std::make_unique<Raw>(address);
  REQUIRE(raw->connected());
  std::string nc(32, '\0');
  randombytes_buf(nc.data(), nc.size());
  raw->Send("TCRAFT01" + nc);
  std::string challenge = raw->Recv(64);
  REQUIRE(challenge.size() == 64);
  std::string ns = challenge.substr(0, 32);
  *listener_proved_key = challenge.substr(32) == Mac(Key('k'), "tailcut-raft-listener", nc, ns, "");
  std::string id_part;
  for (int i = 0; i < 8; ++i) id_part.push_back(static_cast<char>((id >> (8 * i)) & 0xff));
  id_part += std::string(1, static_cast<char>(self.size())) + std::string(1, '\0') + self;
  raw->Send(id_part + Mac(key, "tailcut-raft-dialer", nc, ns, id_part));
  return raw;
}

// True when the listener keeps the connection open after the handshake (it
// accepted), false when it closes it.
bool Dial(const std::string& address, const std::string& key, bool* listener_proved_key, uint64_t id = 9) {
  return !Handshake(address, key, listener_proved_key, id)->Closed(1500);  // a refusal closes at once
}

TEST_CASE("the replica port refuses peers without the key or outside the group") {
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
  SECTION("the key, claiming an id not in the group") {
    // A group of one has no other member: every dialer is refused, after
    // the key is proved.
    bool proved = false;
    CHECK_FALSE(Dial(address, Key('k'), &proved, 1));
    CHECK(proved);
    REQUIRE(WaitFor([&] { return c[0].refused() == 1; }));
    CHECK(c[0].refusals[0].find("replica id 1 is not another member") != std::string::npos);
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

// A keyed peer is a member of the group (docs/RELIABILITY.md, "What a peer
// holding the key can do"): what it sends is Raft's to judge, once tailcut
// has refused (closed and logged) a malformed or oversized message. Raft's
// rules refuse a forged append that does not match the log and a vote
// request while a leader is known; a term from the future is an election,
// and tailcut logs it. None of it may crash a replica or stop the group.
TEST_CASE("a keyed peer's garbage, vote and append from the future do not stop the group") {
  Cluster c(3);
  c.StartAll();
  int leader = c.WaitLeader();
  REQUIRE(leader >= 0);
  REQUIRE(c.Commit(static_cast<size_t>(leader), 1, 5) == 5);
  Replica& attacked = c[static_cast<size_t>(leader)];
  const std::string address = attacked.options.peers[static_cast<size_t>(leader)].address;
  const uint64_t term = attacked.group->term();
  const uint64_t future = term + 1000000;
  const uint64_t member = attacked.options.id == 1 ? 2 : 1;  // the forger claims another member's id
  const std::string who = "replica " + std::to_string(member) + " (claims 127.0.0.1:1, from 127.0.0.1:";
  bool proved = false;
  JobId job = 6;  // the next job to commit
  // The line logged after `from` refusals, if one says `what` (and who sent it).
  auto logged = [&](size_t from, const std::string& what) {
    return WaitFor([&] {
      std::lock_guard<std::mutex> l(attacked.refusals_mu);
      for (size_t i = from; i < attacked.refusals.size(); ++i)
        if (attacked.refusals[i].find(what) != std::string::npos) {
          CHECK(attacked.refusals[i].find(who) != std::string::npos);
          return true;
        }
      return false;
    });
  };

  // The key with an id outside the group is refused and logged; with a
  // member's id, the connection is handed to Raft.
  CHECK_FALSE(Dial(address, Key('k'), &proved, 9));
  REQUIRE(WaitFor([&] { return attacked.refused() == 1; }));
  {
    std::lock_guard<std::mutex> l(attacked.refusals_mu);
    CHECK(attacked.refusals[0].find("replica id 9 is not another member (from 127.0.0.1:") != std::string::npos);
  }
  CHECK(Dial(address, Key('k'), &proved, member));
  CHECK(attacked.refused() == 1);

  // Garbage after the handshake: each connection is closed and logged
  // before libraft allocates what the header claims or reads past it, and
  // the leader commits on after each (jobs 6-11).
  struct Garbage {
    std::string bytes, logged;
  };
  const std::string conf = Conf({{1, "127.0.0.1:1"}});
  for (const Garbage& g : std::vector<Garbage>{
           {Message(255, std::string(16, 'x')), "closed: an unknown message type 255"},
           {U64(RAFT_IO_APPEND_ENTRIES) + U64(uint64_t{1} << 40), "closed: an append header of 1099511627776 bytes"},
           {Message(RAFT_IO_REQUEST_VOTE, U64(future)), "closed: a vote request header of 8 bytes"},
           {Message(RAFT_IO_APPEND_ENTRIES, AppendHeader(term, 1, {1u << 30})), "closed: an entry of 1073741824 bytes"},
           {Message(RAFT_IO_APPEND_ENTRIES, AppendHeader(term, 1, std::vector<uint32_t>(5, 60u << 20))),
            "closed: an append of more than 268435456 bytes"},
           {Message(RAFT_IO_INSTALL_SNAPSHOT, SnapshotHeader(term, conf, uint64_t{1} << 31)),
            "closed: a snapshot of 2147483648 bytes"},
       }) {
    CAPTURE(g.logged);
    const size_t before = attacked.refused();
    auto raw = Handshake(address, Key('k'), &proved, member);
    raw->Send(g.bytes);
    CHECK(raw->Closed());
    CHECK(logged(before, g.logged));
    REQUIRE(attacked.group->is_leader());
    REQUIRE(c.Commit(static_cast<size_t>(leader), job++, 1) == 1);
  }

  // A vote request from the future, from a member with a longer log: the
  // leader is known, so it is refused, the term stays, and it is logged.
  {
    const size_t before = attacked.refused();
    auto raw = Handshake(address, Key('k'), &proved, member);
    raw->Send(Message(RAFT_IO_REQUEST_VOTE, U64(future) + U64(member) + U64(1u << 30) + U64(future) + U64(0)));
    CHECK(logged(before, "a vote request from term " + std::to_string(future) + ", 1000000 ahead of ours (" +
                             std::to_string(term) + "): refused, our term stays"));
  }
  CHECK(attacked.group->is_leader());
  CHECK(attacked.group->term() == term);
  REQUIRE(c.Commit(static_cast<size_t>(leader), job, 5) == 5);
  job += 5;

  // A forged append from the future: one entry after an index this log does
  // not have. The term is Raft's rule: the leader follows it (a higher term)
  // and steps down, the entry fails the log-matching check and is never
  // applied, and the group elects a leader in a later term and commits on.
  {
    std::string header = AppendHeader(future, 1000, {8});
    const size_t before = attacked.refused();
    auto raw = Handshake(address, Key('k'), &proved, member);
    raw->Send(Message(RAFT_IO_APPEND_ENTRIES, header) + "forged!!");
    CHECK(WaitFor([&] { return attacked.group->term() >= future; }));
    CHECK(logged(before, "an append from term " + std::to_string(future) + ", 1000000 ahead of ours (" +
                             std::to_string(term) + "): Raft adopted the term"));
  }
  REQUIRE(WaitFor(
      [&] {
        for (size_t i = 0; i < c.size(); ++i)
          if (c[i].group->is_leader() && c[i].group->term() > future) return true;
        return false;
      },
      30));
  int next = c.WaitLeader();
  REQUIRE(next >= 0);
  REQUIRE(c.Commit(static_cast<size_t>(next), job, 5) == 5);
  job += 5;
  CHECK(WaitFor([&] {
    for (size_t i = 0; i < c.size(); ++i)
      if (c[i].machine->applied() != job - 1) return false;
    return true;
  }));
  for (size_t i = 0; i < c.size(); ++i) c.Stop(i);
  for (size_t i = 0; i < c.size(); ++i) CHECK(c.JobsIn(i) == Range(1, job - 1));
}

}  // namespace
}  // namespace tailcut::replica_test
