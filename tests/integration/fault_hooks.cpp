// Faults on purpose, for tailcut-scheduler-faults only: the daemon's own
// main (programs/tailcut-scheduler/scheduler_main.cpp) compiled again with
// TAILCUT_TEST_FAULTS and this file. The release daemon has none of it
// (docs/RELIABILITY.md, "Faults on purpose").
//
// TAILCUT_FAULT_KILL_AT_COMMIT=MARKER: the first time the core commits a
// task's result, when MARKER does not exist yet, MARKER is created and the
// process SIGKILLs itself. The core commits inside the handling of the
// executor's Report; the journal writes that commit only at the end of the
// loop's turn (its group commit), so the scheduler dies exactly between
// reading the result and making it durable. The marker keeps the restarted
// scheduler (same environment) from dying again.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "tailcut/server/server.h"

namespace {

class KillAtCommit : public tailcut::CoreObserver {
 public:
  explicit KillAtCommit(std::string marker) : marker_(std::move(marker)) {}
  void OnTaskCommitted(tailcut::JobId job, tailcut::TaskIndex task, tailcut::AttemptId attempt, tailcut::ExecutorId,
                       double, const std::string*) override {
    if (std::FILE* f = std::fopen(marker_.c_str(), "r")) {  // killed once already
      std::fclose(f);
      return;
    }
    std::FILE* f = std::fopen(marker_.c_str(), "w");
    if (!f) return;
    std::fprintf(f, "job %llu task %u attempt %llu\n", static_cast<unsigned long long>(job), task,
                 static_cast<unsigned long long>(attempt));
    std::fclose(f);
    std::raise(SIGKILL);
  }

 private:
  std::string marker_;
};

}  // namespace

void InstallTestFaults(tailcut::SchedulerServer& server) {
  static std::unique_ptr<KillAtCommit> kill;
  if (const char* marker = std::getenv("TAILCUT_FAULT_KILL_AT_COMMIT"); marker && *marker) {
    kill = std::make_unique<KillAtCommit>(marker);
    server.AddObserver(kill.get());
  }
}
