// The runtime's events gathered by tests (runtime_test.cpp, python_batch_test.cpp).
#pragma once

#include <chrono>
#include <map>
#include <thread>

#include "tailcut/executor/runtime.h"

namespace tailcut::executor::testing {

using namespace std::chrono_literals;

// Generous guard: tests wait for conditions, never for fixed times.
constexpr auto kGuard = 20s;

// Accumulates runtime events and checks the exactly-once contract.
struct Collector {
  explicit Collector(AttemptRuntime* runtime) : rt(runtime) {}
  AttemptRuntime* rt;
  std::map<AttemptId, int> started;
  std::map<AttemptId, wire::AttemptResult> results;
  int duplicate_results = 0;
  int drains_with_events = 0;

  void Drain() {
    RuntimeEvents ev;
    rt->DrainEvents(&ev);
    if (!ev.empty()) ++drains_with_events;
    for (AttemptId id : ev.started) ++started[id];
    for (auto& r : ev.results) {
      if (results.count(r.attempt_id())) ++duplicate_results;
      results[r.attempt_id()] = r;
    }
  }
  template <typename Pred>
  bool WaitFor(Pred pred) {
    auto deadline = std::chrono::steady_clock::now() + kGuard;
    for (;;) {
      Drain();
      if (pred()) return true;
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(1ms);
    }
  }
};

}  // namespace tailcut::executor::testing
