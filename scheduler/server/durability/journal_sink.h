// The one way into the journal (docs/RELIABILITY.md): every durable fact
// goes through a JournalSink. The core's events reach it as an observer —
// launches with their executor's identity, commits, final statuses, a
// divisible job's shares, output promotions and their answers — and the
// server hands it the jobs it accepts (their wire bytes are the server's).
// It also says when the turn's Work must wait for a commit.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "tailcut/core/types.h"
#include "tailcut/server/journal.h"

namespace tailcut {

// Seconds since the Unix epoch: journaled times survive a restart, the
// core's clock (origin at process start) does not.
double UnixNow();

class JournalSink final : public CoreObserver {
 public:
  // A single scheduler's: straight into its journal, committed by Commit().
  explicit JournalSink(Journal* journal) : writer_(journal), journal_(journal) {}
  // A replicated leader's (docs/RELIABILITY.md, "Replicas"): into a
  // JournalBatch, which the leader proposes as its group commit; Commit()
  // is not for it.
  explicit JournalSink(JournalWriter* batch) : writer_(batch) {}

  // --- the core's events
  void OnTaskCommitted(JobId job, TaskIndex task, AttemptId attempt, ExecutorId executor, double run_s,
                       const std::string* output) override;
  void OnJobFinished(const JobStatusInfo& info) override;
  void OnAttemptLaunched(const LaunchCmd& launch, const std::string& identity) override;
  void OnAttemptEnded(const AttemptRecord& r) override;
  void OnSharesFixed(JobId job, const std::vector<uint64_t>& counts, AttemptId since) override;
  void OnPromotionPending(const PromoteCmd& p) override;
  void OnPromotionAnswered(JobId job, TaskIndex task, AttemptId attempt, const std::string& error) override;

  // --- the server's and recovery's
  // An accepted job, its spec as the wire carried it (owner set).
  void JobAccepted(JobId id, const std::string& key, const std::string& spec);
  // Attempt `a` of `job` ended with its executor, which may bring it back
  // (after a restart too): its launch row stays until the job finishes.
  void KeepUntilJobEnds(JobId job, AttemptId a) { kept_[job].push_back(a); }
  // Recovery: an earlier run's launch that no executor may adopt any more.
  void LaunchDropped(AttemptId a) { writer_->AttemptEnded(a); }
  // Something journaled since the last commit must be durable before the
  // turn's Work goes out: a launch of a task that must not run twice (a
  // crash in between would leave its executor's claim refused and the task
  // run again), a divisible job's shares (a restarted scheduler must know
  // what its executors run), a promotion (resent after a restart).
  bool must_commit_before_send() const { return must_commit_; }
  bool dirty() const { return writer_->dirty(); }
  // One transaction for everything buffered (a single scheduler's journal).
  Status Commit();
  // The replicated leader proposed everything written so far.
  void Proposed() { must_commit_ = false; }
  Status Prune(uint32_t keep, const std::vector<JobId>& parents) { return journal_->Prune(keep, parents); }

 private:
  JournalWriter* writer_;
  Journal* journal_ = nullptr;  // a single scheduler's: writer_
  std::unordered_map<JobId, std::vector<AttemptId>> kept_;
  bool must_commit_ = false;
};

}  // namespace tailcut
