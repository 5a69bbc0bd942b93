// AttemptRuntime: slot fibers pull attempts from one FIFO queue (an attempt
// waiting for GPUs lets those behind it that fit go first).
//
// Why long-lived slot fibers instead of one fiber per attempt: `slots` fibers
// bound concurrency by construction and an attempt costs no fiber creation
// (tiny tasks stay cheap). Instant kernels (noop) skip the queue entirely when
// nothing is waiting ahead of them.
#include "tailcut/executor/runtime.h"

#include <algorithm>
#include <atomic>
#include <optional>

#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/fiber.hpp>
#include <boost/fiber/fixedsize_stack.hpp>
#include <boost/fiber/mutex.hpp>
#include <boost/fiber/operations.hpp>

#include "tailcut/common/log.h"

namespace tailcut::executor {
namespace {

// Virtual size; only touched pages cost memory. Generous for sanitizers.
constexpr size_t kFiberStackBytes = 256 * 1024;

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

wire::AttemptResult MakeResult(AttemptId id, wire::AttemptResult::Outcome outcome, std::string error = {}) {
  wire::AttemptResult r;
  r.set_attempt_id(id);
  r.set_outcome(outcome);
  if (!error.empty()) r.set_error(std::move(error));
  return r;
}

// What every kernel context of `spec` starts with.
void Prepare(KernelContext& ctx, const AttemptSpec& spec) {
  ctx.SetShare(spec.share);
  KernelIdentity id = spec.identity;
  id.attempt_id = spec.id;
  ctx.SetIdentity(id);
  ctx.SetOutputDir(spec.output_dir);
  ctx.SetInputs(&spec.inputs);
  ctx.SetMemoryRequest(spec.memory_mb);
  if (spec.gpus > 0) ctx.SetGpu(spec.gpus, std::vector<int>{});  // the runtime hands out devices
}

// Runs an instant kernel (noop) right here and records start + result.
void RunInstant(const Kernel& kernel, const AttemptSpec& spec, RuntimeEvents* out) {
  CancelToken token;
  KernelContext ctx(spec.args, &token);
  Prepare(ctx, spec);
  auto t0 = std::chrono::steady_clock::now();
  StatusOr<std::string> result = kernel.fn(ctx);
  wire::AttemptResult r = result.ok() ? MakeResult(spec.id, wire::AttemptResult::OK)
                                      : MakeResult(spec.id, wire::AttemptResult::FAILED, result.status().message());
  if (result.ok()) r.set_output(std::move(result).value());
  r.set_run_s(SecondsSince(t0));
  out->started.push_back(spec.id);
  out->results.push_back(std::move(r));
}

}  // namespace

struct AttemptRuntime::FiberSync {
  boost::fibers::mutex mu;
  boost::fibers::condition_variable work_cv;
};

struct AttemptRuntime::Attempt {
  AttemptSpec spec;
  std::vector<int> gpus_held;  // devices taken from free_gpus_ while it runs
  const Kernel* kernel = nullptr;
  CancelToken cancel;
  std::optional<KernelContext> ctx;  // exists while running
  bool running = false;              // a slot (or a batch) holds it; guarded by sync_->mu
  bool void_result = false;          // DropAll: finish silently; guarded by sync_->mu
  bool batch_waiting = false;        // held by a batch, not started yet; guarded by sync_->mu
  std::atomic<bool> started{false};  // its kernel began it (Held, re-registering)
  std::chrono::steady_clock::time_point t0{};  // when it started
};

AttemptRuntime::AttemptRuntime(RuntimeOptions options, const KernelRegistry* kernels, FaultInjector* faults,
                               std::function<void()> on_events)
    : options_{std::max(options.slots, 1u), std::clamp(options.threads, 1u, std::max(options.slots, 1u)), options.gpus},
      kernels_(kernels),
      faults_(faults),
      on_events_(std::move(on_events)),
      start_(std::chrono::steady_clock::now()),
      sync_(std::make_unique<FiberSync>()) {
  for (uint32_t g = 0; g < options_.gpus; ++g) free_gpus_.push_back(static_cast<int>(g));
  for (uint32_t t = 0; t < options_.threads; ++t) {
    // Slot s lives on thread s % threads; fibers stay on their thread.
    uint32_t my_slots = options_.slots / options_.threads + (t < options_.slots % options_.threads ? 1 : 0);
    workers_.emplace_back([this, my_slots] {
      std::vector<boost::fibers::fiber> fibers;
      for (uint32_t i = 0; i < my_slots; ++i)
        fibers.emplace_back(std::allocator_arg, boost::fibers::fixedsize_stack(kFiberStackBytes),
                            [this] { SlotLoop(); });
      for (auto& f : fibers) f.join();
    });
  }
}

AttemptRuntime::~AttemptRuntime() { Shutdown(); }

double AttemptRuntime::ElapsedS() const { return SecondsSince(start_); }

void AttemptRuntime::Submit(std::vector<AttemptSpec> batch) {
  RuntimeEvents done;  // failures and inline-run attempts, emitted together
  bool queued_any = false;
  {
    std::unique_lock<boost::fibers::mutex> lock(sync_->mu);
    if (stopping_) return;
    for (AttemptSpec& spec : batch) {
      if (live_.count(spec.id)) {
        TC_LOG(Warn) << "attempt " << spec.id << " assigned twice; ignoring the second";
        continue;
      }
      const Kernel* kernel = kernels_->Find(spec.kernel);
      if (!kernel) {
        // Also the defensive refusal of a kernel this executor did not list.
        done.results.push_back(
            MakeResult(spec.id, wire::AttemptResult::FAILED, kernels_->MissingReason(spec.kernel)));
        continue;
      }
      if (kernel->traits.instant && InstantInline() && queued_ == 0) {
        // Cheap path: no fiber, no queue, no cross-thread wake-up.
        RunInstant(*kernel, spec, &done);
        continue;
      }
      auto a = std::make_unique<Attempt>();
      a->kernel = kernel;
      a->spec = std::move(spec);
      live_[a->spec.id] = a.get();
      queue_.push_back(std::move(a));
      ++queued_;
      queued_any = true;
    }
  }
  if (queued_any) sync_->work_cv.notify_all();
  EmitAll(&done);
}

bool AttemptRuntime::InstantInline() const { return !faults_ || faults_->options().delay_prob <= 0; }

void AttemptRuntime::EmitAll(RuntimeEvents* batch) {
  if (batch->empty()) return;
  bool wake;
  {
    MutexLock lock(events_mu_);
    wake = events_.empty();
    for (AttemptId id : batch->started) events_.started.push_back(id);
    for (auto& r : batch->results) events_.results.push_back(std::move(r));
  }
  if (wake && on_events_) on_events_();
}

void AttemptRuntime::Cancel(AttemptId id) {
  {
    std::unique_lock<boost::fibers::mutex> lock(sync_->mu);
    auto it = live_.find(id);
    if (it == live_.end()) return;
    Attempt* a = it->second;
    a->cancel.Cancel();
    if (a->running) return;  // its slot reports CANCELLED when the kernel stops
    // Queued: the slot that pops it skips it (lazy removal keeps this O(1)).
    live_.erase(it);
    --queued_;
  }
  auto r = MakeResult(id, wire::AttemptResult::CANCELLED);
  Emit(0, &r);
}

size_t AttemptRuntime::DropAll() {
  size_t dropped = 0;
  {
    std::unique_lock<boost::fibers::mutex> lock(sync_->mu);
    for (auto it = live_.begin(); it != live_.end();) {
      Attempt* a = it->second;
      a->cancel.Cancel();
      ++dropped;
      if (a->running) {
        a->void_result = true;
        ++it;
      } else {
        it = live_.erase(it);
      }
    }
    queued_ = 0;
  }
  MutexLock lock(events_mu_);
  events_.started.clear();
  events_.results.clear();
  return dropped;
}

void AttemptRuntime::Shutdown() {
  std::call_once(shutdown_once_, [this] {
    {
      std::unique_lock<boost::fibers::mutex> lock(sync_->mu);
      stopping_ = true;
      for (auto& [id, a] : live_) a->cancel.Cancel();
    }
    sync_->work_cv.notify_all();
    for (auto& w : workers_) w.join();
    std::unique_lock<boost::fibers::mutex> lock(sync_->mu);
    queue_.clear();
    live_.clear();
    queued_ = 0;
  });
}

void AttemptRuntime::SlotLoop() {
  std::vector<std::unique_ptr<Attempt>> instant;  // a run of queued noops
  std::vector<std::unique_ptr<Attempt>> batch;    // a run of queued attempts of a batch kernel
  RuntimeEvents instant_events;
  for (;;) {
    std::unique_ptr<Attempt> a;
    {
      std::unique_lock<boost::fibers::mutex> lock(sync_->mu);
      auto pick = queue_.end();
      sync_->work_cv.wait(lock, [&] { return stopping_ || (pick = NextStartable()) != queue_.end(); });
      if (stopping_) return;
      a = std::move(*pick);
      queue_.erase(pick);
      if (a->cancel.cancelled()) continue;  // cancelled while queued; already reported
      --queued_;
      if (a->kernel->traits.instant && InstantInline()) {
        // Take the whole run of instant attempts behind it: one lock, one
        // batch of events. They finish now, so they leave live_ at once (a
        // cancel for them is then too late, as for any finished attempt).
        instant.push_back(std::move(a));
        while (!queue_.empty() && instant.size() < 1024) {
          auto& next = queue_.front();
          if (!next->cancel.cancelled()) {
            if (!next->kernel->traits.instant) break;
            --queued_;
            instant.push_back(std::move(next));
          }
          queue_.pop_front();
        }
        for (auto& i : instant) live_.erase(i->spec.id);
      } else if (a->kernel->batch && Batching() && a->spec.gpus == 0) {
        batch.push_back(std::move(a));
        TakeBatch(&batch);
      } else {
        ++running_;
        a->running = true;
        a->ctx.emplace(a->spec.args, &a->cancel, faults_ ? faults_->TimeFactorAt(ElapsedS()) : 1.0);
        Prepare(*a->ctx, a->spec);
        if (a->spec.gpus > 0 && a->spec.gpus <= options_.gpus) {
          // NextStartable saw enough free: the lowest ones, so tests and logs read plainly.
          a->gpus_held.assign(free_gpus_.begin(), free_gpus_.begin() + a->spec.gpus);
          free_gpus_.erase(free_gpus_.begin(), free_gpus_.begin() + a->spec.gpus);
          a->ctx->SetGpu(a->spec.gpus, a->gpus_held);
        }
      }
    }
    if (!instant.empty()) {
      for (auto& i : instant) RunInstant(*i->kernel, i->spec, &instant_events);
      instant.clear();
      EmitAll(&instant_events);
      instant_events.started.clear();
      instant_events.results.clear();
      boost::this_fiber::yield();  // fairness towards the other slot fibers
      continue;
    }
    if (!batch.empty()) {
      RunBatch(&batch);
      batch.clear();
      continue;
    }
    RunAttempt(a.get());
  }
}

bool AttemptRuntime::Batching() const { return !faults_ || !faults_->options().any(); }

// Called under sync_->mu with the popped attempt in `batch`: takes the
// attempts of the same kernel queued right behind it, at most this slot's
// share of the queue (the other slots get theirs) and kMaxBatch.
void AttemptRuntime::TakeBatch(std::vector<std::unique_ptr<Attempt>>* batch) {
  constexpr size_t kMaxBatch = 64;
  const Kernel* kernel = batch->front()->kernel;
  const size_t share = std::max<size_t>(1, (queued_ + 1 + options_.slots - 1) / options_.slots);
  while (!queue_.empty() && batch->size() < std::min(share, kMaxBatch)) {
    auto& next = queue_.front();
    if (!next->cancel.cancelled()) {
      if (next->kernel != kernel || next->spec.gpus > 0) break;
      --queued_;
      batch->push_back(std::move(next));
    }
    queue_.pop_front();
  }
  for (auto& a : *batch) {
    a->running = a->batch_waiting = true;
    ++batch_waiting_;
    a->ctx.emplace(a->spec.args, &a->cancel, 1.0);
    Prepare(*a->ctx, a->spec);
  }
}

// Under sync_->mu: a batch's attempt that was waiting in it counts as running from now.
void AttemptRuntime::Unwait(Attempt* a) {
  if (!a->batch_waiting) return;
  a->batch_waiting = false;
  --batch_waiting_;
  ++running_;
}

void AttemptRuntime::MarkStarted(Attempt* a) {
  if (a->started.exchange(true)) return;
  a->t0 = std::chrono::steady_clock::now();
  {
    std::unique_lock<boost::fibers::mutex> lock(sync_->mu);
    Unwait(a);  // RunAttempt's were counted as running when popped
  }
  Emit(a->spec.id, nullptr);
}

void AttemptRuntime::RunBatch(std::vector<std::unique_ptr<Attempt>>* batch) {
  std::vector<bool> done(batch->size(), false);
  KernelBatch kb;
  for (auto& a : *batch) kb.ctx.push_back(&*a->ctx);
  kb.started = [&](size_t i) { MarkStarted((*batch)[i].get()); };
  kb.finished = [&](size_t i, StatusOr<std::string> out) {
    if (done[i]) return;
    done[i] = true;
    Attempt* a = (*batch)[i].get();
    {
      std::unique_lock<boost::fibers::mutex> lock(sync_->mu);
      Unwait(a);  // never started (a cancel's skip): no start to report; Finish gives the count back
    }
    Finish(a, std::move(out));
  };
  std::string lost = "the batch kernel returned without its result";
  try {
    batch->front()->kernel->batch(kb);
  } catch (const std::exception& e) {  // kernels are a boundary: never kill the executor
    lost = std::string("kernel threw: ") + e.what();
  } catch (...) {
    lost = "kernel threw a non-standard exception";
  }
  for (size_t i = 0; i < batch->size(); ++i)  // started ones never run again here
    if (!done[i] && (*batch)[i]->started) kb.finished(i, Status::Internal(lost));
  // What the kernel did not finish never started: first in line again.
  std::vector<wire::AttemptResult> cancelled;
  size_t again = 0;
  {
    std::unique_lock<boost::fibers::mutex> lock(sync_->mu);
    for (size_t i = batch->size(); i-- > 0;) {
      if (done[i]) continue;
      std::unique_ptr<Attempt>& a = (*batch)[i];
      a->running = a->batch_waiting = false;
      --batch_waiting_;
      a->ctx.reset();
      if (a->void_result || a->cancel.cancelled() || stopping_) {  // Cancel saw it held: it is answered here
        if (!a->void_result && !stopping_) cancelled.push_back(MakeResult(a->spec.id, wire::AttemptResult::CANCELLED));
        live_.erase(a->spec.id);
        continue;
      }
      queue_.push_front(std::move(a));
      ++queued_;
      ++again;
    }
  }
  if (again) sync_->work_cv.notify_all();
  for (auto& r : cancelled) Emit(0, &r);
}

std::deque<std::unique_ptr<AttemptRuntime::Attempt>>::iterator AttemptRuntime::NextStartable() {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    const Attempt& a = **it;
    if (a.cancel.cancelled() || a.spec.gpus == 0 || a.spec.gpus > options_.gpus || a.spec.gpus <= free_gpus_.size())
      return it;
  }
  return queue_.end();
}

void AttemptRuntime::RunAttempt(Attempt* a) {
  MarkStarted(a);
  const auto t0 = a->t0;
  KernelContext& ctx = *a->ctx;
  StatusOr<std::string> out = Status::Unavailable("cancelled");
  bool ran = true;
  if (double extra_ms = faults_ ? faults_->DrawExtraDelayMs() : 0; extra_ms > 0)
    ran = a->cancel.SleepFor(extra_ms / 1000.0);
  if (ran) {
    try {
      out = a->kernel->fn(ctx);
    } catch (const std::exception& e) {  // kernels are a boundary: never kill the executor
      out = Status::Internal(std::string("kernel threw: ") + e.what());
    } catch (...) {
      out = Status::Internal("kernel threw a non-standard exception");
    }
    // Fault injection for kernels that do not stretch their own time.
    if (!a->kernel->traits.self_timed && ctx.time_factor() > 1.0 && out.ok())
      a->cancel.SleepFor((ctx.time_factor() - 1.0) * SecondsSince(t0));
  }
  Finish(a, std::move(out));
}

// Its result, and its slot, GPUs and index entry given back.
void AttemptRuntime::Finish(Attempt* a, StatusOr<std::string> out) {
  const auto t0 = a->t0;
  wire::AttemptResult r;
  r.set_attempt_id(a->spec.id);
  if (a->cancel.cancelled()) {
    r.set_outcome(wire::AttemptResult::CANCELLED);
  } else if (out.ok()) {
    r.set_outcome(wire::AttemptResult::OK);
    r.set_output(std::move(out).value());
  } else {
    r.set_outcome(wire::AttemptResult::FAILED);
    r.set_error(out.status().message());
  }
  if (!a->started)
    r.set_run_s(0);  // a skipped one never ran (no bogus censored sample)
  else
    r.set_run_s(a->ctx && a->ctx->run_time() >= 0 ? a->ctx->run_time() : SecondsSince(t0));
  bool void_result, gave_back;
  {
    std::unique_lock<boost::fibers::mutex> lock(sync_->mu);
    void_result = a->void_result;
    live_.erase(a->spec.id);
    a->running = false;
    --running_;
    // Back to the free set whatever the outcome (cancel and failure too).
    gave_back = !a->gpus_held.empty();
    free_gpus_.insert(free_gpus_.end(), a->gpus_held.begin(), a->gpus_held.end());
    std::sort(free_gpus_.begin(), free_gpus_.end());
    a->gpus_held.clear();
  }
  if (gave_back) sync_->work_cv.notify_all();  // an attempt may wait for them
  if (!void_result) Emit(0, &r);
}

void AttemptRuntime::Emit(AttemptId started, wire::AttemptResult* result) {
  bool wake;
  {
    MutexLock lock(events_mu_);
    wake = events_.empty();
    if (started) events_.started.push_back(started);
    if (result) events_.results.push_back(std::move(*result));
  }
  if (wake && on_events_) on_events_();
}

void AttemptRuntime::DrainEvents(RuntimeEvents* out) {
  out->started.clear();
  out->results.clear();
  MutexLock lock(events_mu_);
  std::swap(*out, events_);
}

std::vector<wire::AttemptProgress> AttemptRuntime::Progress() const {
  std::vector<wire::AttemptProgress> out;
  std::unique_lock<boost::fibers::mutex> lock(sync_->mu);
  for (const auto& [id, a] : live_) {
    if (!a->running) continue;
    wire::AttemptProgress p;
    p.set_attempt_id(id);
    p.set_fraction(a->ctx->progress());
    out.push_back(p);
  }
  return out;
}

std::vector<std::pair<AttemptId, bool>> AttemptRuntime::Held() const {
  std::vector<std::pair<AttemptId, bool>> out;
  std::unique_lock<boost::fibers::mutex> lock(sync_->mu);
  for (const auto& [id, a] : live_) out.emplace_back(id, a->started.load());
  return out;
}

AttemptRuntime::Counts AttemptRuntime::counts() const {
  std::unique_lock<boost::fibers::mutex> lock(sync_->mu);
  return {queued_ + batch_waiting_, running_};
}

}  // namespace tailcut::executor
