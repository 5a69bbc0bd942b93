// clang's thread-safety analysis (-Wthread-safety): state guarded by a mutex
// says so (TC_GUARDED_BY), and clang checks at compile time that it is only
// touched with the mutex held. The clang build (scripts/fuzz.sh build, run
// by .ci/run) turns violations into errors; with other compilers the macros
// are empty. libstdc++'s std::mutex carries no annotations, hence Mutex.
//
//   Mutex mu_;
//   uint64_t n_ TC_GUARDED_BY(mu_) = 0;
//   void Add() { MutexLock lock(mu_); ++n_; }
//
// Mutex, MutexLock and CondVar are as thread-safe as their std:: parts.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define TC_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define TC_THREAD_ANNOTATION(x)
#endif

#define TC_CAPABILITY(x) TC_THREAD_ANNOTATION(capability(x))
#define TC_SCOPED_CAPABILITY TC_THREAD_ANNOTATION(scoped_lockable)
#define TC_GUARDED_BY(x) TC_THREAD_ANNOTATION(guarded_by(x))
#define TC_PT_GUARDED_BY(x) TC_THREAD_ANNOTATION(pt_guarded_by(x))
#define TC_REQUIRES(...) TC_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define TC_ACQUIRE(...) TC_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define TC_RELEASE(...) TC_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TC_TRY_ACQUIRE(...) TC_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define TC_EXCLUDES(...) TC_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define TC_NO_THREAD_SAFETY_ANALYSIS TC_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace tailcut {

// A std::mutex the analysis knows.
class TC_CAPABILITY("mutex") Mutex {
 public:
  void lock() TC_ACQUIRE() { mu_.lock(); }
  void unlock() TC_RELEASE() { mu_.unlock(); }
  bool try_lock() TC_TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  std::mutex mu_;
};

// Holds a Mutex for its scope (std::lock_guard).
class TC_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) TC_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() TC_RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// A condition variable over a Mutex the caller holds.
class CondVar {
 public:
  void NotifyAll() { cv_.notify_all(); }
  void NotifyOne() { cv_.notify_one(); }
  void Wait(Mutex& mu) TC_REQUIRES(mu) { cv_.wait(mu); }
  // Waits until `done()` (evaluated with `mu` held) or `timeout`; returns done().
  template <class Rep, class Period, class Pred>
  bool WaitFor(Mutex& mu, std::chrono::duration<Rep, Period> timeout, Pred done) TC_REQUIRES(mu) {
    return cv_.wait_for(mu, timeout, done);
  }

 private:
  std::condition_variable_any cv_;
};

}  // namespace tailcut
