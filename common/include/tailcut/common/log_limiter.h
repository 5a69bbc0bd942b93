// Rate limit for a log line that can repeat every loop turn (a full disk,
// a flood of bad input): at most one line per interval, and the next one
// says how many were held back, so the error cannot fill the disk itself.
#pragma once

#include <chrono>
#include <cstdint>

namespace tailcut {

class LogLimiter {
 public:
  explicit LogLimiter(std::chrono::steady_clock::duration every = std::chrono::seconds(1)) : every_(every) {}
  // True when a line may be written now; then *held_back is how many were
  // not written since the last one (and the count restarts).
  bool Allow(uint64_t* held_back) {
    auto now = std::chrono::steady_clock::now();
    if (written_ && now - last_ < every_) {
      ++held_back_;
      return false;
    }
    written_ = true;
    last_ = now;
    *held_back = held_back_;
    held_back_ = 0;
    return true;
  }

 private:
  std::chrono::steady_clock::duration every_;
  std::chrono::steady_clock::time_point last_{};
  bool written_ = false;
  uint64_t held_back_ = 0;
};

}  // namespace tailcut
