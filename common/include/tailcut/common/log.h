// Minimal leveled logging to stderr: "2026-11-29T16:40:01.123 INFO  sched  msg".
// Thread-safe; one line per call.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

namespace tailcut {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// Accepts debug|info|warn|error|off.
bool ParseLogLevel(std::string_view text, LogLevel* out);
void SetLogComponent(std::string_view name);  // process-wide tag
void LogLine(LogLevel level, std::string_view message);

namespace internal {
// Lets TC_LOG be a single expression, safe inside an unbraced if/else.
struct Voidify {
  void operator&(std::ostream&) {}
};

class LogMessage {
 public:
  explicit LogMessage(LogLevel level) : level_(level) {}
  ~LogMessage() { LogLine(level_, stream_.str()); }
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};
}  // namespace internal

}  // namespace tailcut

#define TC_LOG(LEVEL)                                             \
  (::tailcut::LogLevel::k##LEVEL < ::tailcut::GetLogLevel())      \
      ? (void)0                                                   \
      : ::tailcut::internal::Voidify() &                          \
            ::tailcut::internal::LogMessage(::tailcut::LogLevel::k##LEVEL).stream()
