#include "keyed_transport.h"

#include <arpa/inet.h>
#include <sodium.h>
#include <uv.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <set>
#include <type_traits>

#include "tailcut/common/log.h"
#include "tailcut/common/log_limiter.h"

namespace tailcut {
namespace {

constexpr char kMagic[8] = {'T', 'C', 'R', 'A', 'F', 'T', '0', '1'};
constexpr size_t kNonce = 32;
constexpr size_t kMac = crypto_auth_hmacsha256_BYTES;
constexpr size_t kMaxAddress = 255;
constexpr size_t kIdHeader = 8 + 2;  // id, address length
static_assert(kMac == 32);

struct Transport;

// A connection's TCP handle and what reading it after the handshake needs,
// in one raft_malloc'd block that libraft frees (as the handle) when it
// closes the stream: so nothing here may need a destructor.
struct Conn {
  uv_tcp_t tcp;  // first: the block's address is the handle's
  Transport* t;
  uv_read_cb libraft_read;  // libraft's read callback, called after ours
  raft_id peer_id;
  char who[kMaxAddress + 96];  // "replica N (claims ADDRESS, from IP:PORT)"
  RaftMessageGuard guard;
};
static_assert(std::is_standard_layout_v<Conn> && std::is_trivially_destructible_v<Conn>);

// One connection from accept/connect until it is handed to Raft or closed.
struct Shake {
  Transport* t = nullptr;
  bool incoming = false;
  uv_tcp_t* tcp = nullptr;  // a Conn's: Raft frees it when it closes a handed-over stream
  uv_timer_t timer{};
  uv_connect_t connect{};
  uv_write_t writes[2]{};
  std::string out[2];
  int writes_pending = 0;
  raft_uv_connect* req = nullptr;  // dialer: Raft's request
  raft_id peer_id = 0;
  std::string peer_address;  // dialer: the address dialled; listener: the one the peer proved
  unsigned char nc[kNonce]{}, ns[kNonce]{};
  unsigned char in[kIdHeader + kMaxAddress + kMac]{};
  size_t want = 0, got = 0;
  enum Step { kConnecting, kHello, kChallenge, kIdPart, kIdBody, kVerified } step = kConnecting;
  bool finished = false;  // handed over or failed
  int open_handles = 0;   // ours still closing (timer, and tcp when failed)
};

struct Transport {
  raft_uv_transport* self = nullptr;
  uv_loop_t* loop = nullptr;
  KeyedTransportOptions o;
  raft_id id = 0;
  std::string address;
  uv_tcp_t listener{};
  bool listener_open = false;
  raft_uv_accept_cb accept_cb = nullptr;
  std::set<Shake*> live;  // until freed
  unsigned unfinished_incoming = 0;
  bool closing = false;
  raft_uv_transport_close_cb close_cb = nullptr;
  LogLimiter refusals_log;                   // before a peer proved the key
  std::map<raft_id, LogLimiter> member_log;  // per member (a fixed set)
};

void Mac(const Transport* t, const char* label, const Shake* s, const unsigned char* tail, size_t tail_len,
         unsigned char out[kMac]) {
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, reinterpret_cast<const unsigned char*>(t->o.key.data()), t->o.key.size());
  crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>(label), std::strlen(label));
  crypto_auth_hmacsha256_update(&st, s->nc, kNonce);
  crypto_auth_hmacsha256_update(&st, s->ns, kNonce);
  if (tail_len) crypto_auth_hmacsha256_update(&st, tail, tail_len);
  crypto_auth_hmacsha256_final(&st, out);
}

void Refused(Transport* t, const std::string& why) {
  std::string line = "replica port: refused a connection: " + why;
  if (t->o.on_refused) {
    t->o.on_refused(line);
  } else if (uint64_t held = 0; t->refusals_log.Allow(&held)) {
    TC_LOG(Warn) << line << (held ? " (" + std::to_string(held) + " more not logged)" : "");
  }
}

// A member's refused message or far future term.
void Report(Transport* t, raft_id peer, const std::string& line) {
  if (t->o.on_refused) {
    t->o.on_refused(line);
  } else if (uint64_t held = 0; t->member_log[peer].Allow(&held)) {
    TC_LOG(Warn) << line << (held ? " (" + std::to_string(held) + " more from it not logged)" : "");
  }
}

// "ip:port" of the TCP peer, or "?".
std::string PeerName(uv_tcp_t* tcp) {
  sockaddr_storage a{};
  int len = sizeof a;
  char ip[INET6_ADDRSTRLEN] = "?";
  if (uv_tcp_getpeername(tcp, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "?";
  if (a.ss_family == AF_INET6) {
    const auto* a6 = reinterpret_cast<const sockaddr_in6*>(&a);
    uv_ip6_name(a6, ip, sizeof ip);
    return "[" + std::string(ip) + "]:" + std::to_string(ntohs(a6->sin6_port));
  }
  const auto* a4 = reinterpret_cast<const sockaddr_in*>(&a);
  uv_ip4_name(a4, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a4->sin_port));
}

const char* MessageName(uint64_t type) {
  switch (type) {
    case RAFT_IO_APPEND_ENTRIES: return "an append";
    case RAFT_IO_APPEND_ENTRIES_RESULT: return "an append result";
    case RAFT_IO_REQUEST_VOTE: return "a vote request";
    case RAFT_IO_REQUEST_VOTE_RESULT: return "a vote result";
    case RAFT_IO_INSTALL_SNAPSHOT: return "a snapshot";
    case RAFT_IO_TIMEOUT_NOW: return "a timeout-now";
    default: return "a message";
  }
}

// libraft's stream after the handshake: each read goes through the guard
// before libraft sees it. libraft's buffers end where each preamble, header
// and payload ends, so the guard judges a length before libraft allocates it.
void GuardedRead(uv_stream_t* stream, ssize_t n, const uv_buf_t* buf) {
  Conn* c = reinterpret_cast<Conn*>(stream);
  Transport* t = c->t;
  if (n <= 0) return c->libraft_read(stream, n, buf);
  const uint64_t done = c->guard.completed();
  const uint64_t term_before = t->o.current_term ? t->o.current_term() : 0;
  if (c->guard.Feed(reinterpret_cast<const unsigned char*>(buf->base), static_cast<size_t>(n)) ==
      RaftMessageGuard::Result::kBad) {
    Report(t, c->peer_id, std::string("replica port: ") + c->who + ": closed: " + c->guard.what());
    return c->libraft_read(stream, UV_EPROTO, buf);  // libraft closes the connection
  }
  c->libraft_read(stream, n, buf);
  if (c->guard.completed() == done || !t->o.current_term) return;
  const uint64_t term = c->guard.last_term();
  if (term <= term_before || term - term_before <= t->o.term_jump_to_log) return;
  const bool adopted = t->o.current_term() >= term;
  Report(t, c->peer_id,
         std::string("replica port: ") + c->who + ": " + MessageName(c->guard.last_type()) + " from term " +
             std::to_string(term) + ", " + std::to_string(term - term_before) + " ahead of ours (" +
             std::to_string(term_before) +
             "): " + (adopted ? "Raft adopted the term (a higher term is an election)" : "refused, our term stays"));
}

void MaybeFireClose(Transport* t) {
  if (!t->closing || t->listener_open || !t->live.empty() || !t->close_cb) return;
  auto cb = t->close_cb;
  t->close_cb = nullptr;
  cb(t->self);
}

void HandleClosed(Shake* s) {
  if (--s->open_handles > 0) return;
  Transport* t = s->t;
  t->live.erase(s);
  delete s;
  MaybeFireClose(t);
}
void OnTimerClosed(uv_handle_t* h) { HandleClosed(static_cast<Shake*>(h->data)); }
void OnTcpClosed(uv_handle_t* h) {
  Shake* s = static_cast<Shake*>(h->data);
  raft_free(h);
  HandleClosed(s);
}

void Finish(Shake* s) {
  s->finished = true;
  if (s->incoming) s->t->unfinished_incoming--;
  uv_timer_stop(&s->timer);
  s->open_handles++;
  uv_close(reinterpret_cast<uv_handle_t*>(&s->timer), OnTimerClosed);
}

// Closes the connection; Raft hears RAFT_NOCONNECTION or RAFT_CANCELED for a dial.
void Fail(Shake* s, int status, const std::string& why) {
  if (s->finished) return;
  Transport* t = s->t;
  if (s->incoming && status != RAFT_CANCELED) {
    Refused(t, why + " (from " + PeerName(s->tcp) + ")");
  } else if (!s->incoming && status != RAFT_CANCELED) {
    TC_LOG(Debug) << "replica " << s->peer_id << " at " << s->peer_address << ": " << why;
  }
  uv_read_stop(reinterpret_cast<uv_stream_t*>(s->tcp));
  Finish(s);
  s->open_handles++;
  uv_close(reinterpret_cast<uv_handle_t*>(s->tcp), OnTcpClosed);
  if (s->req) s->req->cb(s->req, nullptr, status);
}

void HandOver(Shake* s) {
  if (s->step != Shake::kVerified || s->writes_pending > 0 || s->finished) return;
  Transport* t = s->t;
  uv_read_stop(reinterpret_cast<uv_stream_t*>(s->tcp));
  auto* stream = reinterpret_cast<uv_stream_t*>(s->tcp);
  stream->data = nullptr;
  Finish(s);
  if (s->incoming) {
    Conn* c = reinterpret_cast<Conn*>(s->tcp);
    c->peer_id = s->peer_id;
    std::string claimed = s->peer_address;  // the peer's bytes, in a log line: printable only
    for (char& ch : claimed)
      if (ch < 0x20 || ch > 0x7e) ch = '?';
    std::snprintf(c->who, sizeof c->who, "replica %llu (claims %s, from %s)",
                  static_cast<unsigned long long>(s->peer_id), claimed.c_str(), PeerName(s->tcp).c_str());
    t->accept_cb(t->self, s->peer_id, s->peer_address.c_str(), stream);
    // libraft started reading (or, failing, closed the stream): read through the guard.
    if (stream->read_cb && !uv_is_closing(reinterpret_cast<uv_handle_t*>(stream))) {
      c->libraft_read = stream->read_cb;
      stream->read_cb = GuardedRead;
    }
  } else {
    s->req->cb(s->req, stream, 0);
  }
}

void Expect(Shake* s, Shake::Step step, size_t n);

void OnWrite(uv_write_t* w, int status) {
  Shake* s = static_cast<Shake*>(w->data);
  s->writes_pending--;
  if (s->finished) return;
  if (status != 0) return Fail(s, RAFT_NOCONNECTION, std::string("write: ") + uv_strerror(status));
  HandOver(s);
}

void Send(Shake* s, std::string bytes) {
  int i = s->out[0].empty() ? 0 : 1;
  s->out[i] = std::move(bytes);
  uv_buf_t buf = uv_buf_init(s->out[i].data(), static_cast<unsigned>(s->out[i].size()));
  s->writes[i].data = s;
  if (int rv = uv_write(&s->writes[i], reinterpret_cast<uv_stream_t*>(s->tcp), &buf, 1, OnWrite); rv != 0)
    return Fail(s, RAFT_NOCONNECTION, std::string("write: ") + uv_strerror(rv));
  s->writes_pending++;
}

void PutLe(std::string* b, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t GetLe(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A whole message arrived: the next step of either side.
void Advance(Shake* s) {
  Transport* t = s->t;
  switch (s->step) {
    case Shake::kHello: {  // listener: magic | Nc
      if (std::memcmp(s->in, kMagic, sizeof kMagic) != 0) return Fail(s, RAFT_MALFORMED, "not a tailcut replica");
      std::memcpy(s->nc, s->in + sizeof kMagic, kNonce);
      randombytes_buf(s->ns, kNonce);
      unsigned char mac[kMac];
      Mac(t, "tailcut-raft-listener", s, nullptr, 0, mac);
      std::string m(reinterpret_cast<char*>(s->ns), kNonce);
      m.append(reinterpret_cast<char*>(mac), kMac);
      Send(s, std::move(m));
      if (!s->finished) Expect(s, Shake::kIdPart, kIdHeader);
      return;
    }
    case Shake::kChallenge: {  // dialer: Ns | listener's MAC
      std::memcpy(s->ns, s->in, kNonce);
      unsigned char mac[kMac];
      Mac(t, "tailcut-raft-listener", s, nullptr, 0, mac);
      if (crypto_verify_32(mac, s->in + kNonce) != 0)
        return Fail(s, RAFT_NOCONNECTION, "the listener does not hold the replica key");
      std::string m;
      PutLe(&m, t->id, 8);
      PutLe(&m, t->address.size(), 2);
      m += t->address;
      Mac(t, "tailcut-raft-dialer", s, reinterpret_cast<const unsigned char*>(m.data()), m.size(), mac);
      m.append(reinterpret_cast<char*>(mac), kMac);
      s->step = Shake::kVerified;
      Send(s, std::move(m));
      return;
    }
    case Shake::kIdPart: {  // listener: id | address length
      size_t len = GetLe(s->in + 8, 2);
      if (len == 0 || len > kMaxAddress) return Fail(s, RAFT_MALFORMED, "a bad address length");
      Expect(s, Shake::kIdBody, kIdHeader + len + kMac);
      s->got = kIdHeader;  // after the header, which stays: it is under the MAC
      return;
    }
    case Shake::kIdBody: {  // listener: address | dialer's MAC
      size_t body = s->want - kMac;
      unsigned char mac[kMac];
      Mac(t, "tailcut-raft-dialer", s, s->in, body, mac);
      if (crypto_verify_32(mac, s->in + body) != 0) return Fail(s, RAFT_NOCONNECTION, "no replica key");
      s->peer_id = GetLe(s->in, 8);
      s->peer_address.assign(reinterpret_cast<char*>(s->in + kIdHeader), body - kIdHeader);
      if (s->peer_id == 0) return Fail(s, RAFT_MALFORMED, "replica id 0");
      const std::vector<uint64_t>& m = t->o.members;
      if (s->peer_id == t->id || std::find(m.begin(), m.end(), s->peer_id) == m.end())
        return Fail(s, RAFT_MALFORMED, "replica id " + std::to_string(s->peer_id) + " is not another member");
      s->step = Shake::kVerified;
      HandOver(s);
      return;
    }
    default: return Fail(s, RAFT_MALFORMED, "unexpected data");
  }
}

void OnAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  Shake* s = static_cast<Shake*>(h->data);
  buf->base = reinterpret_cast<char*>(s->in + s->got);
  buf->len = s->want - s->got;
}

void OnRead(uv_stream_t* stream, ssize_t n, const uv_buf_t*) {
  Shake* s = static_cast<Shake*>(stream->data);
  if (n == 0 || s->finished) return;
  if (n < 0) return Fail(s, RAFT_NOCONNECTION, std::string("closed during the handshake: ") + uv_strerror(n));
  s->got += static_cast<size_t>(n);
  if (s->got < s->want) return;
  uv_read_stop(stream);  // the next message, if any, is Expect()ed
  Advance(s);
}

void Expect(Shake* s, Shake::Step step, size_t n) {
  s->step = step;
  s->got = 0;
  s->want = n;
  if (int rv = uv_read_start(reinterpret_cast<uv_stream_t*>(s->tcp), OnAlloc, OnRead); rv != 0)
    Fail(s, RAFT_NOCONNECTION, std::string("read: ") + uv_strerror(rv));
}

void OnTimeout(uv_timer_t* timer) {
  Shake* s = static_cast<Shake*>(timer->data);
  Fail(s, RAFT_NOCONNECTION, "the handshake timed out");
}

Shake* NewShake(Transport* t, bool incoming) {
  auto* s = new Shake;
  s->t = t;
  s->incoming = incoming;
  void* block = raft_malloc(sizeof(Conn));
  if (!block) throw std::bad_alloc();
  Conn* c = new (block) Conn{};
  c->t = t;
  c->guard.Init(t->o.limits);
  s->tcp = &c->tcp;
  uv_tcp_init(t->loop, s->tcp);
  s->tcp->data = s;
  uv_timer_init(t->loop, &s->timer);
  s->timer.data = s;
  uv_timer_start(&s->timer, OnTimeout, t->o.handshake_timeout_ms, 0);
  t->live.insert(s);
  return s;
}

void OnConnection(uv_stream_t* server, int status) {
  Transport* t = static_cast<Transport*>(server->data);
  if (status != 0 || t->closing) return;
  if (t->unfinished_incoming >= t->o.max_handshakes) {
    // Accepted only to be closed: the backlog must drain.
    auto* tcp = static_cast<uv_tcp_t*>(raft_malloc(sizeof(uv_tcp_t)));
    uv_tcp_init(t->loop, tcp);
    uv_accept(server, reinterpret_cast<uv_stream_t*>(tcp));
    uv_close(reinterpret_cast<uv_handle_t*>(tcp), [](uv_handle_t* h) { raft_free(h); });
    Refused(t, std::to_string(t->o.max_handshakes) + " handshakes unfinished already");
    return;
  }
  Shake* s = NewShake(t, true);
  t->unfinished_incoming++;
  if (uv_accept(server, reinterpret_cast<uv_stream_t*>(s->tcp)) != 0)
    return Fail(s, RAFT_NOCONNECTION, "accept failed");
  Expect(s, Shake::kHello, sizeof kMagic + kNonce);
}

void OnConnect(uv_connect_t* c, int status) {
  Shake* s = static_cast<Shake*>(c->data);
  if (s->finished) return;
  if (status != 0) return Fail(s, RAFT_NOCONNECTION, std::string("connect: ") + uv_strerror(status));
  randombytes_buf(s->nc, kNonce);
  std::string m(kMagic, sizeof kMagic);
  m.append(reinterpret_cast<char*>(s->nc), kNonce);
  Send(s, std::move(m));
  if (s->finished) return;
  Expect(s, Shake::kChallenge, kNonce + kMac);
}

// "ip:port" or "[ipv6]:port".
bool ParseAddress(const std::string& a, sockaddr_storage* out) {
  size_t colon = a.rfind(':');
  if (colon == std::string::npos || colon + 1 == a.size()) return false;
  std::string host = a.substr(0, colon);
  int port = 0;
  for (char c : a.substr(colon + 1)) {
    if (c < '0' || c > '9' || port > 65535) return false;
    port = port * 10 + (c - '0');
  }
  if (port == 0 || port > 65535) return false;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    return uv_ip6_addr(host.substr(1, host.size() - 2).c_str(), port, reinterpret_cast<sockaddr_in6*>(out)) == 0;
  return uv_ip4_addr(host.c_str(), port, reinterpret_cast<sockaddr_in*>(out)) == 0;
}

Transport* Impl(raft_uv_transport* t) { return static_cast<Transport*>(t->impl); }

int DoInit(raft_uv_transport* rt, raft_id id, const char* address) {
  Transport* t = Impl(rt);
  t->id = id;
  t->address = address;
  if (t->address.empty() || t->address.size() > kMaxAddress) return RAFT_INVALID;
  return 0;
}

int DoListen(raft_uv_transport* rt, raft_uv_accept_cb cb) {
  Transport* t = Impl(rt);
  t->accept_cb = cb;
  sockaddr_storage addr{};
  const std::string& bind = t->o.bind_address.empty() ? t->address : t->o.bind_address;
  if (!ParseAddress(bind, &addr)) return RAFT_INVALID;
  uv_tcp_init(t->loop, &t->listener);
  t->listener.data = t;
  t->listener_open = true;
  if (uv_tcp_bind(&t->listener, reinterpret_cast<sockaddr*>(&addr), 0) != 0 ||
      uv_listen(reinterpret_cast<uv_stream_t*>(&t->listener), 64, OnConnection) != 0) {
    TC_LOG(Error) << "replica port: cannot listen on " << bind;
    return RAFT_IOERR;
  }
  return 0;
}

int DoConnect(raft_uv_transport* rt, raft_uv_connect* req, raft_id id, const char* address, raft_uv_connect_cb cb) {
  Transport* t = Impl(rt);
  sockaddr_storage addr{};
  if (!ParseAddress(address, &addr)) return RAFT_NOCONNECTION;
  req->cb = cb;
  Shake* s = NewShake(t, false);
  s->req = req;
  s->peer_id = id;
  s->peer_address = address;
  s->connect.data = s;
  if (int rv = uv_tcp_connect(&s->connect, s->tcp, reinterpret_cast<sockaddr*>(&addr), OnConnect); rv != 0) {
    s->req = nullptr;  // the error is returned, not called back
    Fail(s, RAFT_NOCONNECTION, uv_strerror(rv));
    return RAFT_NOCONNECTION;
  }
  return 0;
}

void DoClose(raft_uv_transport* rt, raft_uv_transport_close_cb cb) {
  Transport* t = Impl(rt);
  t->closing = true;
  t->close_cb = cb;
  std::vector<Shake*> open;
  for (Shake* s : t->live)
    if (!s->finished) open.push_back(s);
  for (Shake* s : open) Fail(s, RAFT_CANCELED, "closing");
  if (t->listener_open) {
    uv_close(reinterpret_cast<uv_handle_t*>(&t->listener), [](uv_handle_t* h) {
      Transport* t = static_cast<Transport*>(h->data);
      t->listener_open = false;
      MaybeFireClose(t);
    });
  }
  MaybeFireClose(t);
}

}  // namespace

int KeyedTransportInit(raft_uv_transport* rt, uv_loop_t* loop, const KeyedTransportOptions& options) {
  if (options.key.size() != kReplicaKeyBytes) return RAFT_INVALID;
  if (sodium_init() < 0) return RAFT_INVALID;
  auto* t = new Transport;
  t->self = rt;
  t->loop = loop;
  t->o = options;
  if (t->o.max_handshakes == 0) t->o.max_handshakes = 1;
  rt->impl = t;
  rt->init = DoInit;
  rt->listen = DoListen;
  rt->connect = DoConnect;
  rt->close = DoClose;
  return 0;
}

void KeyedTransportRelease(raft_uv_transport* rt) {
  Transport* t = Impl(rt);
  if (!t) return;
  sodium_memzero(t->o.key.data(), t->o.key.size());
  delete t;
  rt->impl = nullptr;
}

}  // namespace tailcut
