#include "tailcut/common/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "tailcut/common/thread_annotations.h"

namespace tailcut {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
Mutex g_mu;
std::string g_component TC_GUARDED_BY(g_mu) = "tailcut";
}  // namespace

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

bool ParseLogLevel(std::string_view t, LogLevel* out) {
  if (t == "debug") *out = LogLevel::kDebug;
  else if (t == "info") *out = LogLevel::kInfo;
  else if (t == "warn") *out = LogLevel::kWarn;
  else if (t == "error") *out = LogLevel::kError;
  else if (t == "off") *out = LogLevel::kOff;
  else return false;
  return true;
}

void SetLogComponent(std::string_view name) {
  MutexLock lock(g_mu);
  g_component = std::string(name);
}

void LogLine(LogLevel level, std::string_view message) {
  static const char* kNames[] = {"DEBUG", "INFO ", "WARN ", "ERROR", "OFF  "};
  auto now = std::chrono::system_clock::now();
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  MutexLock lock(g_mu);
  std::fprintf(stderr, "%s.%03d %s %-8s %.*s\n", stamp, ms, kNames[static_cast<int>(level)],
               g_component.c_str(), static_cast<int>(message.size()), message.data());
}

}  // namespace tailcut
