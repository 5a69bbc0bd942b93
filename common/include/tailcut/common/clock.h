// Time enters the scheduler core only through a Clock, so the same core runs
// on the wall clock (daemons) and on virtual time (simulator, tests).
// SteadyClock::Now may be called from any thread; a FakeClock belongs to the
// one thread that drives it.
#pragma once

#include <cstdint>

namespace tailcut {

// Seconds since an arbitrary, fixed origin.
using Time = double;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Time Now() const = 0;
};

// Monotonic wall time, origin at construction.
class SteadyClock final : public Clock {
 public:
  SteadyClock();
  Time Now() const override;

 private:
  int64_t origin_ns_;
};

// Time moves only when told to: tests and the simulator.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(Time start = 0) : now_(start) {}
  Time Now() const override { return now_; }
  void Set(Time t) { now_ = t; }
  void Advance(Time dt) { now_ += dt; }

 private:
  Time now_;
};

}  // namespace tailcut
