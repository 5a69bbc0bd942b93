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
// its reader thread only fills `frames_`. The worker runs user code, so
// nothing it does may block the owner's thread or grow the executor without
// bound: writes to it never block (Flush), frames it sent wait in a queue of
// bounded bytes (the reader stops reading past it), a frame longer than
// `max_frame` cuts it off, and a worker that closed its socket gets
// kKillWaitS to exit before it is killed (Ending).
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

  // Queue frames for the worker and write what its socket takes now; false
  // when the socket is closed. Flush writes more of the queue: the owner
  // calls it while it waits for answers.
  bool Send(uint8_t type, std::string_view payload);
  bool SendRaw(std::string_view frames);
  bool Flush();

  // The number of the task the worker started last (0: none yet).
  uint64_t Started() const;
  // SIGINT for task `n` only: the worker ignores it in any other.
  void Interrupt(uint64_t n);

  // The next frame within `seconds`; nullopt on timeout; type kDead once
  // the worker has closed its end or was cut off.
  std::optional<Frame> Next(double seconds);

  // Closed its end (or cut off), every frame before taken.
  bool dead();
  // Frames are waiting: between tasks, a worker that sent any is not trusted again.
  bool talked();
  // Why the reader cut the worker off ("sent a frame of N bytes, ..."); "" when it did not.
  std::string cut_off();

  // Waits for the process (it closed its socket: it is exiting; killed
  // when it has not within kKillWaitS) and says how it ended. From a fiber.
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
  bool killed_ = false;  // Ending killed it
  int wait_status_ = 0;
  std::string out_;  // queued for the worker, from out_at_ on
  size_t out_at_ = 0;
  boost::fibers::mutex mu_;
  boost::fibers::condition_variable cv_;    // frames or the end came
  boost::fibers::condition_variable room_;  // the queue fell below its bound, or stop_
  std::deque<Frame> frames_;
  uint64_t queued_ = 0;  // frames_' bytes, with a per-frame overhead
  bool eof_ = false, stop_ = false;
  std::string cut_off_;
  std::thread reader_;  // last: starts once the rest is built
};

}  // namespace tailcut::executor::python
