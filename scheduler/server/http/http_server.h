// The scheduler's HTTP listener (scheduler.http_listen): cpp-httplib on its
// own threads, serving GET handlers that must not touch the core (they read
// what the loop published: metrics.h). docs/METRICS.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tailcut/common/status.h"

namespace tailcut {

// Whether this build serves HTTP (cpp-httplib was found; see
// scheduler/CMakeLists.txt). Without it Start fails and the daemon's
// http_listen defaults to "".
extern const bool kHttpAvailable;

// "HOST:PORT" ("127.0.0.1:7780", "[::1]:7780", "0.0.0.0:7780"; port 0 =
// any free port) into host and port.
StatusOr<std::pair<std::string, int>> ParseHttpListen(std::string_view listen);
// Whether the address only this machine reaches (127.x, localhost, ::1).
bool IsLoopbackHttpListen(std::string_view listen);

// Limits of the HTTP face (docs/LIMITS.md): a connection sends its whole
// request within kHttpRequestTimeLimit of being accepted or is closed; at
// most kHttpMaxConnections are served at once, and one more cuts off the
// connection that has waited longest for its request, so idle and slow
// peers cannot keep a scrape out; each write gets kHttpWriteTimeLimit.
inline constexpr std::chrono::milliseconds kHttpRequestTimeLimit{2000};
inline constexpr std::chrono::milliseconds kHttpWriteTimeLimit{5000};
inline constexpr size_t kHttpMaxConnections = 128;

class HttpServer {
 public:
  // What a GET handler returns: status code, content type, body.
  struct Reply {
    int status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;  // extra response headers
  };
  using Handler = std::function<Reply()>;
  // The request's query parameters (?since=12); a repeated key: the first.
  using Query = std::map<std::string, std::string>;
  using QueryHandler = std::function<Reply(const Query&)>;

  HttpServer();
  ~HttpServer();  // stops and joins
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Register handlers before Start.
  void Get(const std::string& path, Handler handler);
  void Get(const std::string& path, QueryHandler handler);
  // Binds and starts serving on a thread; fails when the address is taken.
  Status Start(std::string_view listen);
  void Stop();
  // "HOST:PORT" with the bound port ("" before Start).
  const std::string& endpoint() const { return endpoint_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string endpoint_;
};

}  // namespace tailcut
