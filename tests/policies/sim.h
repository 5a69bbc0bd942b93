// A tiny virtual-time driver over CoreHarness: attempts start at launch and
// finish after base(task) x speed(executor) seconds of FakeClock time.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "../core/core_harness.h"

namespace tailcut::testing {

struct Sim {
  explicit Sim(CoreOptions o = Opts(), PolicyChain chain = {}) : h(o, std::move(chain)) {}
  static CoreOptions Opts() {
    CoreOptions o;
    o.lost_after_s = 0;  // no heartbeats in these tests
    o.pipeline_s = 0;    // no queueing beyond slots
    return o;
  }

  ExecutorId Exec(uint32_t slots = 1, double slowdown = 1.0) {
    ExecutorId e = h.Exec(slots);
    speed[e] = slowdown;
    Sync();
    return e;
  }

  // Starts newly launched attempts and fixes their finish times.
  void Sync() {
    h.Drain();
    for (; seen < h.launches.size(); ++seen) {
      const LaunchCmd& l = h.launches[seen];
      if (!h.live.count(l.attempt)) continue;
      h.core.AttemptStarted(l.attempt);
      start[l.attempt] = h.clock.Now();
      double s = speed.count(l.executor) ? speed[l.executor] : 1.0;
      end[l.attempt] = h.clock.Now() + (base ? base(l) : 1.0) * s;
      if (fails && fails(l)) {
        h.live.erase(l.attempt);
        h.core.AttemptFailed(l.attempt, "injected failure", 0);
        h.Drain();
      }
    }
  }

  std::string Output(const LaunchCmd& l) { return output ? output(l) : ""; }

  // Finishes due attempts, then ticks the core (so policies never see an
  // attempt past its own end).
  void Step(double dt = 0.1) {
    h.clock.Advance(dt);
    for (bool again = true; again;) {
      again = false;
      for (auto& [a, l] : h.live) {
        if (end.count(a) && end[a] <= h.clock.Now() + 1e-9) {
          LaunchCmd lc = l;
          h.Finish(a, h.clock.Now() - start[a], Output(lc));
          Sync();
          again = true;
          break;
        }
      }
    }
    h.core.Tick();
    Sync();
  }

  bool RunUntil(JobId job, double max_t) {
    while (!h.finished.count(job) && h.clock.Now() < max_t) Step();
    return h.finished.count(job) > 0;
  }

  size_t Copies() const {
    size_t n = 0;
    for (auto& l : h.launches) n += l.copy;
    return n;
  }

  CoreHarness h;
  std::map<ExecutorId, double> speed;
  std::map<AttemptId, double> start, end;
  std::function<double(const LaunchCmd&)> base;
  std::function<bool(const LaunchCmd&)> fails;
  std::function<std::string(const LaunchCmd&)> output;
  size_t seen = 0;
};

template <typename P, typename... A>
PolicyChain Chain(A&&... args) {
  PolicyChain c;
  c.push_back(std::make_unique<P>(std::forward<A>(args)...));
  return c;
}

}  // namespace tailcut::testing
