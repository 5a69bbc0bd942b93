// AttemptRuntime: runs attempts as fibers on a few worker threads, at most
// `slots` at once, the rest queued FIFO. Submit/Cancel never block on
// kernels, so the network thread can call them; finished work comes back as
// batched events via DrainEvents, announced by the `on_events` callback.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tailcut.pb.h"
#include "tailcut/common/ids.h"
#include "tailcut/common/thread_annotations.h"
#include "tailcut/executor/faults.h"
#include "tailcut/executor/kernel.h"

namespace tailcut::executor {

struct AttemptSpec {
  AttemptId id = 0;
  std::string kernel;
  std::string args;
  uint32_t gpus = 0;    // Resources.gpus of the task: >= 1 selects GPU twins
  KernelShare share{};  // Assignment.share, checked (divisible jobs)
  KernelIdentity identity{};  // job, task, count, attempt, copy (Assignment)
  std::string output_dir{};   // the attempt's private output directory, "" for none
  std::vector<KernelInput> inputs{};  // Assignment.inputs
  uint64_t memory_mb = 0;             // Resources.memory_mb: program kernels enforce it
};

// Everything that happened since the previous DrainEvents.
struct RuntimeEvents {
  std::vector<AttemptId> started;
  std::vector<wire::AttemptResult> results;
  bool empty() const { return started.empty() && results.empty(); }
};

struct RuntimeOptions {
  uint32_t slots = 1;    // attempts running at once
  uint32_t threads = 1;  // worker threads carrying the slot fibers
  // GPU devices 0..gpus-1 handed out to attempts, each to one attempt at a
  // time: an attempt asking for n waits in the queue until n are free (a
  // cancelled one may still hold them for a moment). One asking for more
  // than there are runs with none (the CPU twins; only a scheduler told
  // wrong sends one).
  uint32_t gpus = 0;
};

class AttemptRuntime {
 public:
  // `on_events` is called (from any thread, with no lock held) when events
  // become available after a DrainEvents emptied them. Keep it cheap: it
  // should only wake the consumer. `faults` may be null.
  AttemptRuntime(RuntimeOptions options, const KernelRegistry* kernels, FaultInjector* faults,
                 std::function<void()> on_events);
  ~AttemptRuntime();  // Shutdown()
  AttemptRuntime(const AttemptRuntime&) = delete;
  AttemptRuntime& operator=(const AttemptRuntime&) = delete;

  // Queues attempts in order. Unknown or disabled kernels and duplicate ids are answered
  // with a FAILED result (duplicates of a live attempt are ignored).
  void Submit(std::vector<AttemptSpec> batch);
  // Queued: removed at once. Running: its kernel is told to stop. Either way
  // a CANCELLED result follows. Unknown ids are ignored (already finished).
  void Cancel(AttemptId id);
  // Cancels everything and forgets pending events: used when the scheduler
  // is lost and the attempts are void. Returns how many were dropped.
  size_t DropAll();
  // Cancels everything and joins the workers. Idempotent.
  void Shutdown();

  void DrainEvents(RuntimeEvents* out);
  // Progress of every running attempt.
  std::vector<wire::AttemptProgress> Progress() const;
  // Every attempt not finished yet: (id, running), queued ones with false.
  std::vector<std::pair<AttemptId, bool>> Held() const;

  struct Counts {
    uint32_t queued = 0;
    uint32_t running = 0;
  };
  Counts counts() const;
  uint32_t slots() const { return options_.slots; }

 private:
  struct Attempt;
  void SlotLoop();
  void RunAttempt(Attempt* a);
  // Batch kernels (KernelBatch): the attempts queued behind the first, and their run.
  bool Batching() const;  // not under fault injection, which times attempts one by one
  void TakeBatch(std::vector<std::unique_ptr<Attempt>>* batch);
  void RunBatch(std::vector<std::unique_ptr<Attempt>>* batch);
  void MarkStarted(Attempt* a);
  void Unwait(Attempt* a);  // under sync_->mu
  void Finish(Attempt* a, StatusOr<std::string> out);
  void Emit(AttemptId started, wire::AttemptResult* result);
  void EmitAll(RuntimeEvents* batch);
  bool InstantInline() const;  // instant kernels may skip fibers (no delay faults)
  double ElapsedS() const;

  const RuntimeOptions options_;
  const KernelRegistry* kernels_;
  FaultInjector* faults_;
  std::function<void()> on_events_;
  // The first queued attempt that may start now (its GPUs are free), or a
  // cancelled one to drop; end() when none. Called under sync_->mu.
  std::deque<std::unique_ptr<Attempt>>::iterator NextStartable();
  const std::chrono::steady_clock::time_point start_;

  // A Boost.Fiber mutex + condition variable (defined in runtime.cpp, so
  // Boost.Fiber stays out of this header). The mutex guards the queue and
  // the live-attempt index; slot fibers wait on the condition variable
  // under it; plain threads may lock it too.
  struct FiberSync;
  const std::unique_ptr<FiberSync> sync_;
  std::deque<std::unique_ptr<Attempt>> queue_;  // may hold cancelled ones
  std::unordered_map<AttemptId, Attempt*> live_;  // queued or running
  uint32_t queued_ = 0;                           // live entries in queue_
  uint32_t running_ = 0;
  uint32_t batch_waiting_ = 0;  // held by a running batch, not started yet (counted as queued)
  std::vector<int> free_gpus_;  // devices no running attempt holds, ascending
  bool stopping_ = false;

  Mutex events_mu_;
  RuntimeEvents events_ TC_GUARDED_BY(events_mu_);

  std::vector<std::thread> workers_;
  std::once_flag shutdown_once_;
};

}  // namespace tailcut::executor
