#include "http_server.h"

#include <atomic>
#include <charconv>
#include <chrono>
#include <thread>

#if TAILCUT_WITH_HTTP
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <list>
#include <mutex>

#include <httplib.h>
#endif

namespace tailcut {

const bool kHttpAvailable = TAILCUT_WITH_HTTP;

StatusOr<std::pair<std::string, int>> ParseHttpListen(std::string_view listen) {
  auto bad = [&](const char* why) {
    return Status::InvalidArgument("http_listen \"" + std::string(listen) + "\": " + why +
                                   " (HOST:PORT, e.g. 127.0.0.1:7780; \"\" disables)");
  };
  size_t colon = listen.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return bad("no HOST:PORT");
  std::string_view host = listen.substr(0, colon), port_s = listen.substr(colon + 1);
  if (host.front() == '[') {  // [v6]
    if (host.back() != ']' || host.size() < 3) return bad("unbalanced [ ]");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad("an IPv6 address goes in [ ]");
  }
  int port = -1;
  auto [end, ec] = std::from_chars(port_s.data(), port_s.data() + port_s.size(), port);
  if (port_s.empty() || ec != std::errc() || end != port_s.data() + port_s.size() || port < 0 || port > 65535)
    return bad("the port must be 0..65535");
  return std::pair{std::string(host), port};
}

bool IsLoopbackHttpListen(std::string_view listen) {
  auto hp = ParseHttpListen(listen);
  if (!hp.ok()) return false;
  const std::string& h = hp->first;
  return h.rfind("127.", 0) == 0 || h == "localhost" || h == "::1";
}

#if TAILCUT_WITH_HTTP

namespace {

using Clock = std::chrono::steady_clock;

// The connections being served, so that one more can always get in: at the
// cap, the one that has waited longest for its request is cut off
// (shutdown: its read fails at once). One that is being answered stays.
class HttpConnectionLimit {
 public:
  struct Conn {
    int fd;
    bool answering = false;
  };
  using Handle = std::list<Conn>::iterator;

  // False when every slot is answering (refuse this one).
  bool Admit(int fd, Handle* h) {
    std::lock_guard<std::mutex> lock(mu_);
    if (conns_.size() >= kHttpMaxConnections) {
      auto oldest = std::find_if(conns_.begin(), conns_.end(), [](const Conn& c) { return !c.answering; });
      if (oldest == conns_.end()) return false;
      ::shutdown(oldest->fd, SHUT_RDWR);
      oldest->answering = true;  // cut off once; it leaves on its own thread
    }
    *h = conns_.insert(conns_.end(), Conn{fd});
    return true;
  }
  void Answering(Handle h) {
    std::lock_guard<std::mutex> lock(mu_);
    h->answering = true;
  }
  // Before the fd is closed (and its number reused).
  void Leave(Handle h) {
    std::lock_guard<std::mutex> lock(mu_);
    conns_.erase(h);
  }
  void CutAll() {
    std::lock_guard<std::mutex> lock(mu_);
    for (Conn& c : conns_) ::shutdown(c.fd, SHUT_RDWR);
  }

 private:
  std::mutex mu_;
  std::list<Conn> conns_;
};

// One connection's socket for httplib's request parser, with deadlines for
// the whole request (header time limit and idle limit in one) and for each
// write; httplib 0.11's own timeouts are per read, so a peer sending a byte
// every few seconds held a pool thread for ever.
class DeadlineStream final : public httplib::Stream {
 public:
  DeadlineStream(int fd, Clock::time_point request_by, HttpConnectionLimit& guard, HttpConnectionLimit::Handle h)
      : fd_(fd), request_by_(request_by), guard_(guard), handle_(h) {}
  bool is_readable() const override { return Wait(POLLIN, request_by_); }
  bool is_writable() const override { return Wait(POLLOUT, Clock::now() + kHttpWriteTimeLimit); }
  ssize_t read(char* ptr, size_t size) override {
    if (!Wait(POLLIN, request_by_)) return -1;
    return ::recv(fd_, ptr, size, 0);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!answering_) guard_.Answering(handle_);
    answering_ = true;
    if (!Wait(POLLOUT, Clock::now() + kHttpWriteTimeLimit)) return -1;
    return ::send(fd_, ptr, size, MSG_NOSIGNAL);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { Name(getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { Name(getsockname, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
  bool Wait(short events, Clock::time_point by) const {
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(by - Clock::now()).count();
      if (left <= 0) return false;
      pollfd p{fd_, events, 0};
      int n = ::poll(&p, 1, static_cast<int>(left));
      if (n > 0) return true;  // ready, or an error the next call reports
      if (n == 0 || errno != EINTR) return false;
    }
  }
  template <typename F>
  void Name(F f, std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    ip.clear();
    port = 0;
    if (f(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return;
    char host[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
      auto* in = reinterpret_cast<sockaddr_in*>(&a);
      inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
      port = ntohs(in->sin_port);
    } else if (a.ss_family == AF_INET6) {
      auto* in = reinterpret_cast<sockaddr_in6*>(&a);
      inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof host);
      port = ntohs(in->sin6_port);
    }
    ip = host;
  }

  int fd_;
  Clock::time_point request_by_;
  HttpConnectionLimit& guard_;
  HttpConnectionLimit::Handle handle_;
  bool answering_ = false;
};

thread_local bool refuse_inline = false;  // set while the listener thread runs a connection it must refuse

// httplib's server, one request per connection, each under the guard.
class GuardedServer final : public httplib::Server {
 public:
  HttpConnectionLimit guard;

 private:
  bool process_and_close_socket(socket_t sock) override {
    const Clock::time_point request_by = Clock::now() + kHttpRequestTimeLimit;
    HttpConnectionLimit::Handle h;
    if (!refuse_inline && guard.Admit(sock, &h)) {
      DeadlineStream stream(sock, request_by, guard, h);
      bool closed = false;
      process_request(stream, /*close_connection=*/true, closed, [](httplib::Request&) {});
      guard.Leave(h);
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return true;
  }
};

// A thread per connection, at most kHttpMaxConnections plus those cut off
// and leaving: a slow or idle peer holds only its own thread, never a
// scrape's. Beyond that the listener closes the connection itself.
class ConnectionThreads final : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(HttpConnectionLimit& guard) : guard_(guard) {}
  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (running_ < 2 * kHttpMaxConnections) {
        ++running_;
        std::thread([this, fn = std::move(fn)] {
          fn();
          std::lock_guard<std::mutex> done(mu_);
          if (--running_ == 0) idle_.notify_all();
        }).detach();
        return;
      }
    }
    refuse_inline = true;
    fn();
    refuse_inline = false;
  }
  void shutdown() override {
    guard_.CutAll();
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return running_ == 0; });
  }

 private:
  HttpConnectionLimit& guard_;
  std::mutex mu_;
  std::condition_variable idle_;
  size_t running_ = 0;
};

}  // namespace

struct HttpServer::Impl {
  GuardedServer server;
  std::thread thread;
  std::atomic<bool> done{false};
};

HttpServer::HttpServer() : impl_(std::make_unique<Impl>()) {
  // Scrapes and dashboard polls are small and cheap; what must not happen
  // is that idle or slow peers keep them waiting (ConnectionThreads,
  // HttpConnectionLimit, DeadlineStream; docs/LIMITS.md, "HTTP").
  impl_->server.new_task_queue = [g = &impl_->server.guard] { return new ConnectionThreads(*g); };
  // httplib's default sets SO_REUSEPORT, which lets a second scheduler
  // bind the same port and share the scrapes silently; SO_REUSEADDR alone
  // still allows a restart while old connections linger.
  impl_->server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Get(const std::string& path, Handler handler) {
  Get(path, QueryHandler([h = std::move(handler)](const Query&) { return h(); }));
}

void HttpServer::Get(const std::string& path, QueryHandler handler) {
  impl_->server.Get(path, [h = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
    Query q;
    for (const auto& [k, v] : req.params) q.emplace(k, v);  // emplace keeps the first
    Reply r = h(q);
    res.status = r.status;
    for (const auto& [k, v] : r.headers) res.set_header(k, v);
    res.set_content(std::move(r.body), r.content_type.c_str());
  });
}

Status HttpServer::Start(std::string_view listen) {
  auto hp = ParseHttpListen(listen);
  if (!hp.ok()) return hp.status();
  auto [host, port] = *hp;
  httplib::Server& s = impl_->server;
  if (port == 0) {
    port = s.bind_to_any_port(host);
    if (port < 0) return Status::IoError("cannot listen for HTTP on " + std::string(listen));
  } else if (!s.bind_to_port(host, port)) {
    return Status::IoError("cannot listen for HTTP on " + std::string(listen) + " (address in use?)");
  }
  endpoint_ = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  impl_->thread = std::thread([this] {
    impl_->server.listen_after_bind();
    impl_->done = true;
  });
  // httplib's stop() only works once the server runs: wait for that, so a
  // Stop() right after Start() cannot leave the thread listening.
  while (!s.is_running() && !impl_->done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return Status::Ok();
}

void HttpServer::Stop() {
  if (!impl_->thread.joinable()) return;
  impl_->server.stop();
  impl_->thread.join();
}

#else  // built without cpp-httplib

struct HttpServer::Impl {};
HttpServer::HttpServer() : impl_(std::make_unique<Impl>()) {}
HttpServer::~HttpServer() = default;
void HttpServer::Get(const std::string&, Handler) {}
void HttpServer::Get(const std::string&, QueryHandler) {}
Status HttpServer::Start(std::string_view) {
  return Status::FailedPrecondition(
      "this scheduler was built without HTTP support (cpp-httplib): set http_listen = \"\"");
}
void HttpServer::Stop() {}

#endif

}  // namespace tailcut
