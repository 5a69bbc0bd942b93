// GET /metrics over a plain socket (no HTTP library): the tests that read
// the scheduler's counters, in process (tests/server) or of the daemon
// (tests/integration).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>

namespace tailcut::testing {

// GET http://ENDPOINT/PATH ("127.0.0.1:PORT", "/metrics"): the whole
// reply, headers included; empty when the request failed.
inline std::string HttpGet(const std::string& endpoint, const std::string& path) {
  const size_t colon = endpoint.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(endpoint.substr(colon + 1))));
  if (inet_pton(AF_INET, endpoint.substr(0, colon).c_str(), &a.sin_addr) != 1) return "";
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  timeval limit{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  std::string reply;
  const std::string request = "GET " + path + " HTTP/1.0\r\n\r\n";
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return reply;
}

// GET http://ENDPOINT/metrics ("127.0.0.1:PORT"): "name{labels}" -> value
// of every sample; empty when the scrape failed.
inline std::map<std::string, double> ScrapeMetrics(const std::string& endpoint) {
  std::map<std::string, double> out;
  const std::string reply = HttpGet(endpoint, "/metrics");
  std::istringstream in(reply.substr(std::min(reply.size(), reply.find("\r\n\r\n"))));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line[0] == '\r') continue;
    const size_t sp = line.rfind(' ');
    if (sp != std::string::npos) out[line.substr(0, sp)] = std::atof(line.c_str() + sp + 1);
  }
  return out;
}

}  // namespace tailcut::testing
