#include "python_batch.h"

#include <signal.h>

#include <optional>
#include <string>
#include <vector>

#include "child_run.h"
#include "python_worker.h"
#include "tailcut/common/log.h"

namespace tailcut::executor::python {
namespace {

// One batch on one worker: tasks base+1 .. base+n (the worker's numbers).
struct BatchRun {
  BatchRun(KernelBatch& batch, Worker& worker, size_t count, uint64_t first, double grace)
      : b(batch), w(worker), n(count), base(first), grace_s(grace) {}
  KernelBatch& b;
  Worker& w;
  const size_t n;
  const uint64_t base;
  const double grace_s;
  size_t next = 0;       // the first task not answered yet
  size_t announced = 0;  // tasks told started
  std::vector<bool> skip_sent = std::vector<bool>(n, false);
  size_t interrupted = SIZE_MAX;  // the task a SIGINT went to, and when
  Clock::time_point interrupted_at{};
  std::string killed;  // why this side killed the worker; "" while it has not
  Clock::time_point killed_at{};
  std::optional<MemoryWatch> memory;
  size_t memory_for = SIZE_MAX;

  // True when the worker answered every task and may serve again.
  bool Serve() {
    for (;;) {
      w.Flush();  // the rest of the batch, and skips, as the worker reads them
      std::optional<Frame> f = w.Next(0.005);
      if (!killed.empty() && SecondsSince(killed_at) > kKillWaitS) {  // something else holds its socket
        Died();
        return false;
      }
      Watch();
      if (!f) continue;
      switch (f->type) {
        case kProgress: {
          float p = 0;
          if (f->payload.size() == 4) std::memcpy(&p, f->payload.data(), 4);
          if (next < n) b.ctx[next]->ReportProgress(p);
          break;
        }
        case kResult:
        case kCancelled:
          if (next >= n) return Broken("sent an answer for no task");
          Announce(base + next + 1);
          if (f->type == kResult) {
            if (f->payload.size() < 8) return Broken("sent a result without its run time");
            double run_s = 0;
            std::memcpy(&run_s, f->payload.data(), 8);
            // The worker's clock: in a batch the executor reads answers in bursts, and its own
            // clock would give one task the gap and the others none (the predictors judge them).
            if (run_s >= 0 && run_s < 1e9) b.ctx[next]->SetRunTime(run_s);
            f->payload.erase(0, 8);
            b.started(next);  // ran, though a skip was sent for it
            ++w.tasks;
            b.finished(next++, std::move(f->payload));
          } else {
            b.finished(next++, Status::Unavailable("cancelled"));
          }
          if (next == n) return killed.empty();
          break;
        case kDead:
          if (std::string why = w.cut_off(); killed.empty() && !why.empty()) return Broken(why);
          Died();
          return false;
        default: return Broken("sent frame type " + std::to_string(f->type) + " mid-task");
      }
    }
  }

  // Tasks up to number `upto` started, but for those a skip went to: skipped, or
  // (rarely) started before it came; their answer tells (R: ran).
  void Announce(uint64_t upto) {
    for (; announced < n && base + announced + 1 <= upto; ++announced)
      if (!skip_sent[announced]) b.started(announced);
  }

  // Between frames: starts, cancels, the memory request, a stuck cancel.
  void Watch() {
    if (!killed.empty()) return;
    const uint64_t s = w.Started();
    Announce(s);
    const size_t running = s > base + next ? static_cast<size_t>(std::min<uint64_t>(s - base - 1, n)) : n;
    if (running < n && memory_for != running) {
      memory.emplace(b.ctx[running]->memory_mb(), static_cast<int>(w.pid()), false);
      memory_for = running;
    }
    if (running < n && memory && memory->Over()) return Kill("python: " + memory->Why());
    for (size_t i = next; i < n; ++i) {
      if (!b.ctx[i]->cancelled()) continue;
      if (i == running && interrupted != i) {
        w.Interrupt(base + i + 1);  // KeyboardInterrupt in the function
        interrupted = i;
        interrupted_at = Clock::now();
      } else if ((running == n || i > running) && !skip_sent[i]) {  // not started: the worker skips it
        const uint64_t id = base + i + 1;
        w.Send(kSkip, std::string_view(reinterpret_cast<const char*>(&id), 8));
        skip_sent[i] = true;
      }
    }
    if (interrupted != SIZE_MAX && interrupted >= next && SecondsSince(interrupted_at) > grace_s) {
      TC_LOG(Info) << "python worker (pid " << w.pid() << ") did not stop within " << grace_s
                   << " s of SIGINT: killed, a fresh one takes its place";
      Kill("cancelled");
    }
  }

  // Kills the worker; what it answered before dying still counts (Died).
  void Kill(std::string why) {
    killed = std::move(why);
    killed_at = Clock::now();
    kill(w.pid(), SIGKILL);
  }

  bool Broken(const std::string& what) {
    Kill("python worker (pid " + std::to_string(w.pid()) + ") " + what + ": replaced");
    for (;;) {  // the answers after it are void too: the worker is not trusted
      std::optional<Frame> f = w.Next(0.05);
      if ((f && f->type == kDead) || SecondsSince(killed_at) > kKillWaitS) break;
    }
    Died();
    return false;
  }

  // The worker is gone: the task it had started fails with how it ended
  // (cancelled when that was the kill's reason), and so does the batch's
  // first, told started as it went (failed, not queued again: a task that
  // kills every worker it goes to must not go round for ever); those it
  // never started are left unfinished: the runtime queues them again.
  void Died() {
    const uint64_t s = w.Started();
    const std::string how = killed.empty() ? w.Ending() : killed;
    for (size_t i = next; i < n && (i == 0 || base + i + 1 <= s); ++i) {
      if (killed == "cancelled" && b.ctx[i]->cancelled())
        b.finished(i, Status::Unavailable("cancelled"));
      else if (killed.rfind("python: ", 0) == 0)
        b.finished(i, Status::ResourceExhausted(killed));
      else if (!killed.empty())
        b.finished(i, Status::Internal(how));
      else if (base + i + 1 <= s)
        b.finished(i, Status::Internal(how + " while running the task (os._exit, a crash, or killed; "
                                             "a fresh worker takes its slot)"));
      else
        b.finished(
            i, Status::Internal(how + " after taking the task, before starting it (a fresh worker takes its slot)"));
    }
  }
};

}  // namespace

bool ServeBatch(KernelBatch& b, Worker& w, size_t n, uint64_t base, double grace_s) {
  return BatchRun{b, w, n, base, grace_s}.Serve();
}

}  // namespace tailcut::executor::python
