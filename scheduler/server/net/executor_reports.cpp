#include "executor_reports.h"

#include <cmath>
#include <string>

namespace tailcut {
namespace {

// The result's run time, unless it is no time at all (NaN, infinite,
// negative, over a year): then 0, which lets the core measure it, so the
// predictors never learn a forged or broken figure.
double RunSeconds(const wire::AttemptResult& res, ExecutorId e, const BadInputFn& bad) {
  double run_s = SanitizeRunSeconds(res.run_s());
  if (run_s != res.run_s())
    bad("AttemptResult.run_s = " + std::to_string(res.run_s()) + " from executor " + std::to_string(e) +
        " replaced by the scheduler's own measure");
  return run_s;
}

}  // namespace

TakeBackCounts TakeBackFromWire(SchedulerCore& core, ExecutorId e, const wire::Register& r, wire::Work* cancel,
                                const BadInputFn& bad) {
  TakeBackCounts n;
  for (const auto& res : r.undelivered())
    if (res.outcome() == wire::AttemptResult::OK &&
        core.CommitOrphanResult(res.job_id(), res.task_index(), res.attempt_id(), e, res.output(),
                                RunSeconds(res, e, bad)))
      ++n.committed;
  for (const auto& h : r.running()) {
    if (core.AdoptAttempt(h.attempt_id(), h.job_id(), h.task_index(), e, h.started()).ok())
      ++n.adopted;
    else
      cancel->add_cancel(h.attempt_id());
  }
  return n;
}

bool ApplyReport(SchedulerCore& core, ExecutorId e, const wire::Report& r, const BadInputFn& bad) {
  const uint64_t entries =
      uint64_t{static_cast<uint64_t>(r.started_size())} + r.progress_size() + r.results_size() + r.promoted_size();
  const uint64_t handed = core.AttemptsHandedTo(e);
  if (entries > kReportEntriesPerAttempt * handed + kReportEntriesSlack) {
    bad("a Report of " + std::to_string(entries) + " entries from executor " + std::to_string(e) + ", handed " +
        std::to_string(handed) + " attempts so far, refused whole (at most " +
        std::to_string(kReportEntriesPerAttempt) + " an attempt + " + std::to_string(kReportEntriesSlack) + ")");
    return false;
  }
  for (const auto& s : r.started())
    if (core.AcceptsReport(e, s.attempt_id())) core.AttemptStarted(s.attempt_id());
  for (const auto& p : r.progress()) {
    if (!core.AcceptsReport(e, p.attempt_id())) continue;
    if (!std::isfinite(p.fraction()) || p.fraction() < 0 || p.fraction() > 1) {
      bad("Report.progress.fraction = " + std::to_string(p.fraction()) + " from executor " + std::to_string(e) +
          " ignored");
      continue;
    }
    core.AttemptProgress(p.attempt_id(), p.fraction());
  }
  for (const auto& res : r.results()) {
    if (!core.AcceptsReport(e, res.attempt_id())) continue;
    double run_s = RunSeconds(res, e, bad);
    switch (res.outcome()) {
      case wire::AttemptResult::OK: core.AttemptSucceeded(res.attempt_id(), res.output(), run_s); break;
      case wire::AttemptResult::FAILED: core.AttemptFailed(res.attempt_id(), res.error(), run_s); break;
      default: core.AttemptDropped(res.attempt_id(), "executor dropped it: " + res.error()); break;
    }
  }
  return true;
}

}  // namespace tailcut
