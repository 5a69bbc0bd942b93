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

// Another clock that can be held at one reading: while held, Now() answers
// the time read when the hold began. The scheduler holds its core's clock
// while it applies one executor Report and while it takes the core's
// commands for one turn: the Report's entries arrived together, and the
// turn's launches go out together, so each shares one reading instead of
// one clock read per attempt started, ended and launched (issue 41: three
// per no-op, 6-7% of the scheduler's samples). Readings stay monotonic: a
// hold reads the clock afresh. Holds nest (the outermost one's reading
// counts). Not thread-safe: it belongs to the thread that holds it.
class HeldClock final : public Clock {
 public:
  explicit HeldClock(const Clock& clock) : clock_(clock) {}
  Time Now() const override { return depth_ > 0 ? held_ : clock_.Now(); }
  void Hold() {
    if (depth_++ == 0) held_ = clock_.Now();
  }
  void Release() {
    if (depth_ > 0) --depth_;
  }
  bool held() const { return depth_ > 0; }

  // Holds `clock` for its lifetime.
  class Scope {
   public:
    explicit Scope(HeldClock& clock) : clock_(clock) { clock_.Hold(); }
    ~Scope() { clock_.Release(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    HeldClock& clock_;
  };

 private:
  const Clock& clock_;
  Time held_ = 0;
  int depth_ = 0;
};

}  // namespace tailcut
