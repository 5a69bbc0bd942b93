// The `default` selector's replays off the scheduler's loop (issue 39;
// docs/POLICIES.md, "Live."). A synchronous ReplayEngine (the simulator's,
// sim::SimReplayEngine, which policies/ may not link) runs on one thread of
// its own, at a lower priority (nice), one replay at a time; the engines a
// ReplayThread hands out queue their replays to it (at most `max_queued`
// waiting, beyond which Start answers false: try later) and Poll never
// waits. So the loop that calls Start and Poll (the selector's, on the
// scheduler's loop) never waits on a replay.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "tailcut/policies/replay.h"

namespace tailcut {

struct ReplayThreadOptions {
  uint32_t max_queued = 4;  // replays waiting for the thread (all engines), beside the one running
  int nice = 10;            // the thread's nice increment (0: the scheduler's priority; 19 the lowest)
};

// One thread and the synchronous engine it runs; shared by the engines it
// makes (each holds it), so it lives until the last of them is gone. The
// thread starts at the first replay.
class ReplayThread : public std::enable_shared_from_this<ReplayThread> {
 public:
  // `make` builds the synchronous engine the thread runs (called on it).
  static std::shared_ptr<ReplayThread> Create(std::function<std::unique_ptr<ReplayEngine>()> make,
                                              ReplayThreadOptions o = {});
  ~ReplayThread();  // waits for the replay in flight, drops the queued ones
  ReplayThread(const ReplayThread&) = delete;
  ReplayThread& operator=(const ReplayThread&) = delete;

  // An asynchronous engine whose replays run on this thread.
  std::unique_ptr<ReplayEngine> NewEngine();
  // Replays finished on the thread so far, and queued or running now.
  uint64_t finished() const;
  size_t pending() const;

  struct Slot;  // one engine's replay: its model in, its scores out

 private:
  ReplayThread(std::function<std::unique_ptr<ReplayEngine>()> make, ReplayThreadOptions o);
  friend class ThreadedReplayEngine;
  bool Enqueue(std::shared_ptr<Slot> s);
  void Run();

  std::function<std::unique_ptr<ReplayEngine>()> make_;
  ReplayThreadOptions o_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Slot>> queue_;
  bool running_ = false, stop_ = false;
  uint64_t finished_ = 0;
  std::thread thread_;
};

// PolicyServices whose engines run `make`'s engine on one ReplayThread.
PolicyServices ThreadedReplayServices(std::function<std::unique_ptr<ReplayEngine>()> make, ReplayThreadOptions o = {});

}  // namespace tailcut
