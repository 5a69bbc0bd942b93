// One warm Python worker process of the `python` kernel (python_kernel.cpp)
// and the frames it speaks (the protocol: python_kernel.cpp's head comment,
// python/tailcut/worker.py). Private to the executor library.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>

namespace tailcut::executor::python {

using Clock = std::chrono::steady_clock;
constexpr uint8_t kInputs = 'I', kTask = 'T', kSkip = 'X', kHello = 'H', kProgress = 'P', kResult = 'R',
                  kCancelled = 'C', kStartError = 'E';
constexpr uint8_t kDead = 0;        // not on the wire: the worker closed its end
constexpr size_t kStateBytes = 16;  // the shared page: u64 started task, u64 task a SIGINT is for
constexpr double kKillWaitS = 2;    // for a killed worker's socket to close

inline double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Frame {
  uint8_t type = kDead;
  std::string payload;
};

// One frame's bytes: [u32 length][type][payload].
void AppendFrame(std::string* out, uint8_t type, std::string_view payload);

// "exited with code N", "was killed by signal N": a waitpid status.
std::string DescribeExit(int wait_status);

// One worker process. Owned by one fiber at a time (the pool hands it out),
// its reader thread only fills `frames_`.
class Worker {
 public:
  // `max_frame`: a longer frame is a broken worker (it is cut off), not an
  // allocation. `state`: the shared page (kStateBytes), unmapped here.
  Worker(pid_t pid, int fd, uint64_t max_frame, void* state);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  pid_t pid() const { return pid_; }
  uint32_t tasks = 0;  // tasks run to the end
  uint64_t sent = 0;   // T frames sent: the number of the last task handed over

  bool Send(uint8_t type, std::string_view payload);
  bool SendRaw(std::string_view frames);

  // The number of the task the worker started last (0: none yet).
  uint64_t Started() const;
  // SIGINT for task `n` only: the worker ignores it in any other.
  void Interrupt(uint64_t n);

  // The next frame within `seconds`; nullopt on timeout; type kDead once
  // the worker has closed its end.
  std::optional<Frame> Next(double seconds);

  bool dead();

  // Waits for the process (it closed its socket: it is exiting) and says how it ended.
  std::string Ending();

  uint64_t RssBytes() const;

 private:
  void Reap();
  // Reads what is there (up to 64 KiB at a time) and hands over every
  // whole frame in it at once: one wake-up for a batch's answers.
  void ReadLoop();

  const pid_t pid_;
  const int fd_;
  const uint64_t max_frame_;
  uint64_t* const state_;
  bool reaped_ = false;
  int wait_status_ = 0;
  boost::fibers::mutex mu_;
  boost::fibers::condition_variable cv_;
  std::deque<Frame> frames_;
  bool eof_ = false;
  std::thread reader_;  // last: starts once the rest is built
};

}  // namespace tailcut::executor::python
