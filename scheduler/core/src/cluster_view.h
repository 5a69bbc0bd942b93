// The ClusterView that policies read: a read-only window on a CoreState.
// Proposals the core accepts change the state, so later policies in the
// chain see them.
#pragma once

#include <functional>
#include <vector>

#include "core_state.h"

namespace tailcut::core {

// Written in place (Find*: a view built aside and copied out stalled on
// store forwarding, issue 41).
void FillJobView(const Job& j, JobView* v);
void FillExecView(const ExecutorState& e, ExecutorView* v);
inline JobView MakeJobView(const Job& j) {
  JobView v;
  FillJobView(j, &v);
  return v;
}
inline ExecutorView MakeExecView(const ExecutorState& e) {
  ExecutorView v;
  FillExecView(e, &v);
  return v;
}

class StateView final : public ClusterView {
 public:
  explicit StateView(const CoreState& s) : s_(s) {}

  Time Now() const override { return s_.Now(); }
  // Running jobs in id order.
  void ForEachJob(const std::function<void(const JobView&)>& fn) const override;
  void ForEachRunningAttempt(const std::function<void(const AttemptView&)>& fn) const override;
  // In attempt id order.
  void ForEachAttemptOn(ExecutorId e, const std::function<void(const AttemptView&)>& fn) const override;
  bool FindAttempt(AttemptId a, AttemptView* out) const override;
  uint64_t FreeSlots() const override { return s_.free_slots; }
  // Executors in id order.
  void ForEachExecutor(const std::function<void(const ExecutorView&)>& fn) const override;
  // Any retained job, finished ones too.
  bool FindJob(JobId id, JobView* out) const override;
  bool FindExecutor(ExecutorId id, ExecutorView* out) const override;
  const std::vector<float>& CommittedRunTimes(JobId id) const override;
  double MedianRunTime(JobId id) const override;
  uint32_t CopiesAllowed() const override { return s_.CopiesAllowed(); }
  uint32_t TotalSlots() const override { return s_.total_slots; }
  const PredictorSuite* Predictors() const override { return s_.predictors.get(); }
  double ReportLag() const override { return s_.ReportLag(); }

 private:
  const CoreState& s_;
};

}  // namespace tailcut::core
