#include "http_server.h"

#include <atomic>
#include <charconv>
#include <chrono>
#include <thread>

#if TAILCUT_WITH_HTTP
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

struct HttpServer::Impl {
  httplib::Server server;
  std::thread thread;
  std::atomic<bool> done{false};
};

HttpServer::HttpServer() : impl_(std::make_unique<Impl>()) {
  // Scrapes and dashboard polls are small: four threads, not httplib's
  // default of one per core. A connection holds its thread while kept
  // alive, and a browser keeps several idle between its polls, which would
  // stall every other request for the keep-alive timeout: one request per
  // connection instead (cheap: the listener is loopback or a private net).
  impl_->server.new_task_queue = [] { return new httplib::ThreadPool(4); };
  impl_->server.set_keep_alive_max_count(1);
  // httplib's default sets SO_REUSEPORT, which lets a second scheduler
  // bind the same port and share the scrapes silently; SO_REUSEADDR alone
  // still allows a restart while old connections linger.
  impl_->server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  impl_->server.set_read_timeout(5, 0);
  impl_->server.set_write_timeout(5, 0);
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
